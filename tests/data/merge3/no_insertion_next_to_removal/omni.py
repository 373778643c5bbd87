# ---------- Omni-new ----------
self.omni_step(batch)
# ---------- Omni-new ----------
