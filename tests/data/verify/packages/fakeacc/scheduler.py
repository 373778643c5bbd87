from dataclasses import dataclass, field


@dataclass
class SchedulerOutput:
    total_num_scheduled_tokens: int = 0
    num_scheduled_tokens: dict = field(default_factory=dict)
