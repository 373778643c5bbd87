from fakeacc.runner_v1 import NPUModelRunner

HELP = """
# ---------- Omni-new ----------
Blocks are fenced by marker comments such as the line above.
"""


class OmniRunner(NPUModelRunner):
    def execute_model(self, batch):
        self.prepare(batch)
        # ---------- Omni-new ----------
        self.omni_hook(batch, doc="""
        # ---------- Omni-new ----------
        """)
        # ---------- Omni-new ----------
        output = self.model(batch)
        if output is None:
            return None
        return output
