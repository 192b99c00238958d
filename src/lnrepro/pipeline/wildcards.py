"""Wildcard constraints of names the config gives (runs, corpora, figures, archives)."""
import re


def names_regex(names):
    """A wildcard constraint matching exactly these names ('.' and '+' are literal in a name)."""
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
