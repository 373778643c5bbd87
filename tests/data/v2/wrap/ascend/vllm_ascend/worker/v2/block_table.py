# Stand-ins of vllm-ascend's V2 helpers, written for omni-port's tests.
from vllm.v1.worker.gpu.block_table import BlockTables


class AscendBlockTables(BlockTables):
    pass


class SmallChipBlockTables(BlockTables):
    pass
