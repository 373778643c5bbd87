record(first)
emit_event(second.kind, second.payload)
