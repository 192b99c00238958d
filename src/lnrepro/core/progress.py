"""A trainer's log: lines on stderr, flushed at once so a job's log file shows them as they come, and
the run's ETA its progress lines state. Apart from the loop, so resume and the tasks log alike
without importing it."""
import sys
import time


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def duration(seconds):
    """42s, 3m05s or 2h07m: short enough for a progress line."""
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    return f"{s // 60}m{s % 60:02d}s" if s < 3600 else f"{s // 3600}h{s % 3600 // 60:02d}m"


class RunClock:
    """The run's ETA: the updates left at this process's pace so far, which includes its validations
    and checkpoints (a resumed run counts from its restart, not from the updates it resumed after)."""

    def __init__(self, updates_done, total, clock=time.time):
        self.start, self.total, self.clock, self.t0 = updates_done, total, clock, clock()

    def eta(self, updates):
        done = updates - self.start
        return duration((self.clock() - self.t0) / done * (self.total - updates)) if done else "?"
