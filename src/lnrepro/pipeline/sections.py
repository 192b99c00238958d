"""The config sections only some targets read (probe, claims, admin, bert), each checked once: where
the plan is rule all's, before any job (Pipeline.check_plan); else the first time a job of the plan
reads the section (its accessor asks `checked`), so planning results/figures/fig4.pdf does not stop
at an error of the admin: section."""


class Sections:
    def __init__(self):
        self.section_checks = {}  # section -> its checks, in the order of the Snakefile's includes
        self.done = set()

    def register(self, section, *checks):
        self.section_checks[section] = checks

    def checked(self, section):
        """Run the section's checks once: one line and exit (config_error) at the first error."""
        if section not in self.done:
            self.done.add(section)  # first: a check reads the section through its accessor
            for check in self.section_checks[section]:
                check()

    def check_all(self):
        for section in self.section_checks:
            self.checked(section)
