"""The papers' analyses: one command module each (figures, probes, theory, tables, claims),
and the helpers they share (plotting, probing, outcomes)."""
