"""Drives libxmtp's content codecs (PyPI `xmtp-bindings`) for the Swift XMTPCodec tests.

Reads one JSON document on stdin: {"cases": [case, ...]} and prints {"results": [result, ...]}.

Values cross the boundary as trees: an Ffi object is {"$class": "FfiReply", field: value, ...}, bytes are
{"$bytes": "<hex>"}, an enum member is {"$enum": "FfiReactionAction", "name": "ADDED"}; str, int, None, lists and
dicts are themselves.

Cases:
  {"op": "encode", "fn": "encode_reaction", "arg": tree}  -> {"hex": EncodedContent bytes} | {"error": text}
  {"op": "decode", "fn": "decode_reaction", "hex": h}     -> {"value": tree} | {"error": text}
  {"op": "compress", "format": "zlib"|"gzip"|"raw", "hex": h} -> {"hex": compressed}  (Python's zlib module)
  {"op": "version"}                                       -> {"value": libxmtp version string}
"""

import json
import sys
import zlib

import xmtp_bindings as xb


def from_tree(tree):
    """Builds Python/Ffi values from a tree."""
    if isinstance(tree, list):
        return [from_tree(item) for item in tree]
    if isinstance(tree, dict):
        if "$bytes" in tree:
            return bytes.fromhex(tree["$bytes"])
        if "$enum" in tree:
            return getattr(getattr(xb, tree["$enum"]), tree["name"])
        if "$class" in tree:
            cls = getattr(xb, tree["$class"])
            fields = {key: from_tree(value) for key, value in tree.items() if key != "$class"}
            return cls(**fields)
        return {key: from_tree(value) for key, value in tree.items()}
    return tree


def to_tree(value):
    """Turns Python/Ffi values into a tree."""
    if value is None or isinstance(value, (bool, int, float, str)):
        if hasattr(value, "name") and type(value).__name__.startswith("Ffi"):
            return {"$enum": type(value).__name__, "name": value.name}
        return value
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": bytes(value).hex()}
    if isinstance(value, list):
        return [to_tree(item) for item in value]
    if isinstance(value, dict):
        return {key: to_tree(item) for key, item in value.items()}
    if hasattr(value, "name") and hasattr(value, "value") and type(value).__name__.startswith("Ffi"):
        return {"$enum": type(value).__name__, "name": value.name}
    if hasattr(value, "__dict__"):
        tree = {"$class": type(value).__name__}
        for key, item in vars(value).items():
            if not key.startswith("_"):
                tree[key] = to_tree(item)
        return tree
    raise TypeError(f"cannot convert {type(value).__name__}")


def run(case):
    op = case["op"]
    try:
        if op == "encode":
            return {"hex": bytes(getattr(xb, case["fn"])(from_tree(case["arg"]))).hex()}
        if op == "decode":
            return {"value": to_tree(getattr(xb, case["fn"])(bytes.fromhex(case["hex"])))}
        if op == "compress":
            data = bytes.fromhex(case["hex"])
            fmt = case["format"]
            if fmt == "zlib":
                return {"hex": zlib.compress(data, 9).hex()}
            wbits = {"gzip": 31, "raw": -15}[fmt]
            compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
            return {"hex": (compressor.compress(data) + compressor.flush()).hex()}
        if op == "version":
            return {"value": xb.get_version_info()}
        return {"error": f"unknown op {op}"}
    except Exception as error:  # libxmtp raises FfiError subclasses; report them as data
        return {"error": f"{type(error).__name__}: {error}"}


def main():
    request = json.load(sys.stdin)
    results = [run(case) for case in request["cases"]]
    json.dump({"results": results}, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
