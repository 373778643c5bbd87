from dataclasses import dataclass, field


@dataclass
class ModelConfig:
    hidden_size: int = 0


@dataclass
class VllmConfig:
    model_config: ModelConfig = field(default_factory=ModelConfig)
    speculative_config: object | None = None
