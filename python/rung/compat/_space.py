"""Ray's nested param_space as Rung's search_space, and Rung's flat configs
back as Ray's nested dicts.

Rung's API takes nested spaces itself (docs/api.md, "Nested and
conditional spaces"): an object without "type" is a sub-space, a `choice`
whose values are objects a conditional choice, and a trial's config is
flat, its keys the parameters' dotted paths. Ray hands its trainable the
nested dict. So the space goes to rungd as it is (each leaf written as an
API domain), and a config comes back through `nest()`, guided by the
space's structure (a parameter name may itself hold a dot, so splitting
every key at its dots would be wrong).

The structure travels as a *tree*: {name: subtree} for every key that is a
sub-space or a conditional choice (a conditional choice's subtree is the
union of its branches'); leaves are not in it.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..convert import API_DOMAIN_TYPES, from_ray_param_space


def _is_api_domain(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("type") in API_DOMAIN_TYPES


def _is_grid_search(value: Any) -> bool:
    return isinstance(value, Mapping) and list(value) == ["grid_search"]


def _find_sample_from(value: Any, path: str) -> None:
    """Refuses a tune.sample_from anywhere in value, naming its path."""
    if isinstance(value, _SampleFrom):
        raise ValueError(f"{path}: tune.sample_from is not supported: rungd draws every "
                         "config itself, so a function cannot be sent; use a domain "
                         "(tune.uniform, tune.choice, ...), or compute the value in the "
                         "trainable from the others")
    if isinstance(value, Mapping):
        for k, v in value.items():
            _find_sample_from(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _find_sample_from(v, f"{path}[{i}]")


def to_search_space(space: Mapping[str, Any]) -> dict:
    """A Ray param_space (nested dicts of domains and constants, choices
    of dicts) as Rung's search_space: rung.convert translates it whole
    (sub-spaces, conditional choices, Ray's domain objects); this only
    names tune.sample_from, which this package's tune returns."""
    if not isinstance(space, Mapping):
        raise ValueError(f"param_space: must be a dict of parameters, not "
                         f"{type(space).__name__}")
    _find_sample_from(space, "")
    return from_ray_param_space(space)


def tree_of(space: Mapping[str, Any]) -> dict:
    """The nesting tree of an API search_space (module docstring)."""
    tree: dict[str, Any] = {}
    for name, value in space.items():
        if isinstance(value, Mapping) and "type" not in value:
            tree[name] = tree_of(value)
        elif isinstance(value, Mapping) and value.get("type") == "choice" and any(
                isinstance(v, Mapping) for v in value.get("values", ())):
            merged: dict[str, Any] = {}
            for branch in value["values"]:
                if isinstance(branch, Mapping):
                    _merge(merged, tree_of(branch))
            tree[name] = merged
    return tree


def _merge(into: dict, other: Mapping) -> None:
    for k, v in other.items():
        _merge(into.setdefault(k, {}), v)


def nest(flat: Mapping[str, Any], tree: Mapping[str, Any]) -> dict:
    """A flat config (dotted keys) as the nested dict Ray hands its
    trainable: a key descends into a container of `tree` while it starts
    with that container's name and a dot; the rest is the leaf's name."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        node, sub, rest = out, tree, key
        descended = True
        while descended:
            descended = False
            # The longest container name wins ("a.b" before "a" if both exist).
            for name in sorted(sub, key=len, reverse=True):
                if rest.startswith(name + ".") and isinstance(node.get(name, {}), dict):
                    node = node.setdefault(name, {})
                    sub, rest = sub[name], rest[len(name) + 1:]
                    descended = True
                    break
        node[rest] = value
    return out


def flatten(nested: Mapping[str, Any], prefix: str = "") -> dict:
    """{"a": {"b": x}} as {"a.b": x}: Ray's nested names of a scheduler's
    hyperparam_mutations as Rung's parameter paths. API domains and
    grid_search dicts are leaves."""
    out: dict[str, Any] = {}
    for key, value in nested.items():
        path = prefix + key
        if isinstance(value, Mapping) and not _is_api_domain(value) \
                and not _is_grid_search(value) and value:
            out.update(flatten(value, path + "."))
        else:
            out[path] = value
    return out


def flat_names(space: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The parameter paths of an API search_space outside conditional branches."""
    names = []
    for key, value in space.items():
        if isinstance(value, Mapping) and "type" not in value:
            names += flat_names(value, prefix + key + ".")
        else:
            names.append(prefix + key)
    return names


class _SampleFrom:
    """What tune.sample_from returns: refused when the space is sent."""

    def __init__(self, func: Any):
        self.func = func

    def __repr__(self) -> str:
        return f"tune.sample_from({self.func!r})"
