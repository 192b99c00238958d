"""The config as text: what YAML lets through silently and nothing downstream should see.

- a key given twice in one mapping (YAML keeps the last: `lr: 1e-3` then `lr: 5e-1` trains at 0.5);
- aliases nested in aliases ("billion laughs"): the loaded config shares its nodes, but anything
  that walks or prints it (jsonschema's validation, its error message) walks the expansion;
- a text far longer than any setting's: config text travels in job commands and the report.
Each is found without expanding anything: nodes are visited once each, by identity.
"""
import yaml

MERGE_TAG = "tag:yaml.org,2002:merge"  # `<<: *recipe`: its keys may be overridden, that is its purpose


def duplicate_key(path):
    """(key, line) of the first key given twice in one mapping of the YAML file at path, or None. A file
    YAML cannot read is not this check's to report (Snakemake has read it already)."""
    try:
        with open(path, encoding="utf-8") as f:
            root = yaml.compose(f, Loader=yaml.SafeLoader)
    except (OSError, yaml.YAMLError):
        return None
    seen, stack = set(), [root] if root is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys = {}
            for key, value in node.value:
                if key.tag != MERGE_TAG and isinstance(key, yaml.ScalarNode):
                    if key.value in keys:
                        return key.value, key.start_mark.line + 1
                    keys[key.value] = key
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return None


def duplicate_key_error(path, shown):
    """The one-line error for a key given twice in the YAML file at path (named `shown`), or None."""
    twice = duplicate_key(path)
    return twice and (f"{shown} line {twice[1]}: key '{twice[0]}' is given twice in one mapping; YAML would keep "
                      "the last one silently: give it once")


def expanded_size(value, limit):
    """How many values the config holds once every alias is expanded where it is used, counted without
    expanding (each container's count is computed once); stops counting above limit."""
    counts = {}

    def count(v):
        if not isinstance(v, (dict, list)):
            return 1
        if id(v) not in counts:
            counts[id(v)] = limit + 1  # a container reached again inside itself: a cycle, over any limit
            children = v.values() if isinstance(v, dict) else v
            total = 1
            for child in children:
                total += count(child)
                if total > limit:
                    break
            counts[id(v)] = total
        return counts[id(v)]

    return count(value)


def longest_text(value, path=""):
    """(key path, length) of the longest string in the config (keys included), each container visited
    once; ("", 0) if there is none."""
    best, seen, stack = ("", 0), set(), [(value, path)]
    while stack:
        v, where = stack.pop()
        if isinstance(v, str):
            best = max(best, (where, len(v)), key=lambda b: b[1])
        elif isinstance(v, (dict, list)) and id(v) not in seen:
            seen.add(id(v))
            items = v.items() if isinstance(v, dict) else enumerate(v)
            for k, child in items:
                key = f"{where}[{k}]" if isinstance(v, list) else f"{where}.{k}".lstrip(".")
                if isinstance(k, str):
                    best = max(best, (key, len(k)), key=lambda b: b[1])
                stack.append((child, key))
    return best
