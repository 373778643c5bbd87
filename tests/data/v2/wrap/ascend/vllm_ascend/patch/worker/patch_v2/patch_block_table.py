# A V2 patch whose replacement depends on the chip, written for omni-port's tests.
from vllm.v1.worker.gpu import model_runner

from vllm_ascend.utils import SMALL_CHIP

if SMALL_CHIP:
    from vllm_ascend.worker.v2.block_table import SmallChipBlockTables as AscendBlockTables
else:
    from vllm_ascend.worker.v2.block_table import AscendBlockTables

model_runner.BlockTables = AscendBlockTables
