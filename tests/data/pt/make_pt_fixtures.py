#!/usr/bin/env python3
"""Writes the torch .pt fixtures used by tests/unit/test_torch_pickle.cpp (python3 stdlib only, no torch).

The files reproduce what torch.save (new zipfile format, torch 2.x) writes:
  * a zip archive whose records live under one folder named after the file (torch.save('conds.pt') -> 'conds/'),
    stored uncompressed, each record's data aligned to 64 bytes with a 'FB' padding extra field;
  * records in torch's order: data.pkl, .format_version, .storage_alignment, byteorder, data/<key>..., version,
    .data/serialization_id;
  * data.pkl: pickle protocol 2 where every storage is a persistent id
    ('storage', torch.<Type>Storage, key, location, numel) and every tensor reduces to
    torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, OrderedDict()).
Stand-in classes with torch's module and qualified names make the stdlib pickler emit the same opcodes.

Run from anywhere: python3 tests/data/pt/make_pt_fixtures.py  (rewrites the .pt files next to this script)
"""

import collections
import io
import os
import pickle
import struct
import sys
import types
import zipfile

OUT_DIR = os.path.dirname(os.path.abspath(__file__))
ALIGNMENT = 64  # torch's kFieldAlignment


# --- stand-ins for the torch names the pickle refers to ------------------------------------------------------------

def _install_torch_stand_ins():
    torch_module = types.ModuleType("torch")
    utils_module = types.ModuleType("torch._utils")

    def _rebuild_tensor_v2(*args):
        raise RuntimeError("stand-in: never called")

    def _rebuild_parameter(*args):
        raise RuntimeError("stand-in: never called")

    for function in (_rebuild_tensor_v2, _rebuild_parameter):
        function.__module__ = "torch._utils"
        function.__qualname__ = function.__name__
        setattr(utils_module, function.__name__, function)
    torch_module._utils = utils_module

    for name in ["FloatStorage", "HalfStorage", "BFloat16Storage", "DoubleStorage", "LongStorage", "IntStorage",
                 "BoolStorage", "ByteStorage"]:
        setattr(torch_module, name, type(name, (), {"__module__": "torch"}))
    sys.modules["torch"] = torch_module
    sys.modules["torch._utils"] = utils_module
    return torch_module, _rebuild_tensor_v2, _rebuild_parameter


torch, rebuild_tensor_v2, rebuild_parameter = _install_torch_stand_ins()


def _bf16_bytes(values):
    # bfloat16 = upper half of the float32 bits (the fixture values are exactly representable).
    out = b""
    for v in values:
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        assert bits & 0xFFFF == 0, f"{v} is not exact in bfloat16"
        out += struct.pack("<H", bits >> 16)
    return out


# element type -> (storage class name, struct format or encoder, element size)
DTYPES = {
    "f32": ("FloatStorage", "<f", 4),
    "f16": ("HalfStorage", "<e", 2),
    "bf16": ("BFloat16Storage", _bf16_bytes, 2),
    "f64": ("DoubleStorage", "<d", 8),
    "i64": ("LongStorage", "<q", 8),
    "i32": ("IntStorage", "<i", 4),
    "bool": ("BoolStorage", "<?", 1),
    "u8": ("ByteStorage", "<B", 1),
}


class Storage:
    """A typed storage: torch pickles it as a persistent id and writes its bytes to data/<key>."""

    def __init__(self, dtype, values, location="cpu", declared_numel=None, write_record=True):
        class_name, encoder, _ = DTYPES[dtype]
        self.storage_class = getattr(torch, class_name)
        self.data = encoder(values) if callable(encoder) else b"".join(struct.pack(encoder, v) for v in values)
        self.numel = len(values) if declared_numel is None else declared_numel
        self.location = location
        self.write_record = write_record


class Tensor:
    """A strided view of a Storage; reduces exactly like torch.Tensor._reduce_ex_internal for a CPU tensor."""

    def __init__(self, storage, size, stride=None, offset=0, metadata=None):
        self.storage = storage
        self.size = tuple(size)
        self.stride = tuple(stride) if stride is not None else _contiguous_strides(self.size)
        self.offset = offset
        self.metadata = metadata  # torch appends torch._utils.get_tensor_metadata(t) when it is not empty

    def __reduce_ex__(self, protocol):
        backward_hooks = collections.OrderedDict()
        args = (self.storage, self.offset, self.size, self.stride, False, backward_hooks)
        return (rebuild_tensor_v2, args + ((self.metadata,) if self.metadata else ()))


class Parameter:
    """torch.nn.Parameter without Python state: reduces to _rebuild_parameter(data, requires_grad, hooks)."""

    def __init__(self, data):
        self.data = data

    def __reduce_ex__(self, protocol):
        return (rebuild_parameter, (self.data, True, collections.OrderedDict()))


def _contiguous_strides(size):
    strides, step = [], 1
    for dim in reversed(size):
        strides.insert(0, step)
        step *= dim
    return tuple(strides)


def tensor(dtype, size, values, location="cpu"):
    return Tensor(Storage(dtype, values, location), size)


# --- the archive writer ---------------------------------------------------------------------------------------------

def write_archive(path, records, root=None):
    """Writes records (name -> bytes, in order) under <root>/ like torch's PyTorchStreamWriter."""
    root = root or os.path.splitext(os.path.basename(path))[0]
    with open(path, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as archive:
        for name, data in records:
            full_name = f"{root}/{name}"
            info = zipfile.ZipInfo(full_name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            data_start = f.tell() + 30 + len(full_name.encode()) + 4  # local header + name + 'FB' field header
            padding = (-data_start) % ALIGNMENT
            info.extra = b"FB" + struct.pack("<H", padding) + b"Z" * padding
            archive.writestr(info, data)


def torch_save(obj, path, protocol=2, root=None):
    storage_keys = {}  # id(storage) -> key (the same str object each time, as torch's id_map does)
    storages = {}

    def persistent_id(value):
        if not isinstance(value, Storage):
            return None
        key = storage_keys.setdefault(id(value), str(len(storage_keys)))
        storages[key] = value
        return ("storage", value.storage_class, key, value.location, value.numel)

    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=protocol)
    pickler.persistent_id = persistent_id
    pickler.dump(obj)
    records = [("data.pkl", buffer.getvalue()), (".format_version", b"1"), (".storage_alignment", b"64"),
               ("byteorder", b"little")]
    records += [(f"data/{key}", storage.data) for key, storage in storages.items() if storage.write_record]
    records += [("version", b"3\n"), (".data/serialization_id", b"0" * 40)]
    write_archive(path, records, root)


def pickle_only(path, data_pkl):
    """An archive whose data.pkl is the given (hand-written, usually broken) pickle."""
    write_archive(path, [("data.pkl", data_pkl), ("byteorder", b"little"), ("version", b"3\n")], "archive")


# --- fixtures -------------------------------------------------------------------------------------------------------

def conds():
    # Chatterbox's conds.pt: torch.save(dict(t3=T3Cond.__dict__, gen=ref_dict)). Np = 12 prompt tokens.
    n_prompt = 12
    t3 = {
        "speaker_emb": tensor("f32", (1, 256), [(i - 128) / 64 for i in range(256)]),
        "clap_emb": None,
        "cond_prompt_speech_tokens": tensor("i64", (1, 150), [(i * 37) % 6561 for i in range(150)]),
        "cond_prompt_speech_emb": None,
        "emotion_adv": tensor("f32", (1, 1, 1), [0.5], location="cuda:0"),
    }
    gen = {
        "prompt_token": tensor("i64", (1, n_prompt), [(i * 101) % 6561 for i in range(n_prompt)]),
        "prompt_token_len": tensor("i64", (1,), [n_prompt]),
        "prompt_feat": tensor("f32", (1, 2 * n_prompt, 80),
                              [(m - 40) / 8 + t / 32 for t in range(2 * n_prompt) for m in range(80)]),
        "prompt_feat_len": None,
        "embedding": tensor("f32", (1, 192), [(i % 13 - 6) / 4 for i in range(192)]),
    }
    torch_save({"t3": t3, "gen": gen}, os.path.join(OUT_DIR, "conds.pt"))


def views():
    # Views sharing one storage of 0..23 (as float32), like torch.save([base, base[1:, ::2], base.t(), base[2, 3]]).
    # Protocol 2 with 300 labels: memo indices pass 255 (LONG_BINPUT / LONG_BINGET).
    shared = Storage("f32", [float(i) for i in range(24)])
    base = Tensor(shared, (4, 6))
    labels = [f"v{i}" for i in range(300)]
    torch_save({
        "base": base,
        "rows": Tensor(shared, (3, 3), (6, 2), offset=6),       # base[1:, ::2]
        "transposed": Tensor(shared, (6, 4), (1, 6)),            # base.t()
        "element": Tensor(shared, (), (), offset=15),            # base[2, 3]
        "broadcast": Tensor(shared, (2, 3), (0, 1), offset=4),   # base[0, 4:7].expand(2, 3)
        "empty": Tensor(shared, (0, 5), (5, 1)),
        "base_again": base,                                      # the same tensor object: a memo reference
        "labels": labels,
        "last_label_again": labels[-1],
    }, os.path.join(OUT_DIR, "views.pt"), root="archive")


def dtypes_and_values():
    # One tensor per storage type, plus plain Python values. Protocol 4 exercises FRAME, SHORT_BINUNICODE,
    # MEMOIZE and STACK_GLOBAL; 300 strings push memo indices past 255 (LONG_BINPUT / LONG_BINGET).
    many = [f"s{i}" for i in range(300)]
    torch_save({
        "f16": tensor("f16", (2, 3), [0.5, -1.0, 2.0, 65504.0, -0.25, 0.0]),
        "bf16": tensor("bf16", (3,), [1.5, -2.0, 0.15625]),
        "f64": tensor("f64", (2,), [0.1, -3.0]),
        "i32": tensor("i32", (2, 2), [-7, 0, 2**31 - 1, -2**31]),
        "bool": tensor("bool", (3,), [True, False, True]),
        "u8": tensor("u8", (2,), [0, 255]),
        "parameter": Parameter(tensor("f32", (2,), [0.25, -4.0])),
        "with_metadata": Tensor(Storage("f32", [3.0]), (1,), metadata={"neg": False}),
        "values": {
            "none": None, "true": True, "false": False,
            "small": 7, "negative": -3, "medium": 40000, "large": 2**40, "min_i64": -2**63,
            "real": 1.5, "text": "héllo",
            "list": [1, "two", (3.0, None)], "single": ["only"], "tuple1": (1,), "tuple3": (1, 2, 3), "tuple4": (1, 2, 3, 4),
            "nested": {"a": {"b": [[], {}]}},
        },
        "many": many, "many_last_again": many[-1],
    }, os.path.join(OUT_DIR, "dtypes.pt"), protocol=4)


def hostile():
    # Code-execution attempts: the classic os.system reduce (protocol 2 GLOBAL) and builtins.eval via STACK_GLOBAL.
    pickle_only(os.path.join(OUT_DIR, "malicious.pt"),
                b"\x80\x02cos\nsystem\nq\x00X\n\x00\x00\x00echo pwnedq\x01\x85q\x02Rq\x03.")
    pickle_only(os.path.join(OUT_DIR, "malicious_stack_global.pt"),
                b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93\x8c\x041+1\x85R.")
    # A global whose name carries a terminal escape sequence: the error message must not replay it.
    pickle_only(os.path.join(OUT_DIR, "escape_global.pt"), b"\x80\x02cos\x1b[2J\nsystem\n.")
    # A class that is allowed to be named but must never be called: OrderedDict with arguments is fine in
    # Python, but a storage class called like a function is not.
    pickle_only(os.path.join(OUT_DIR, "call_storage_class.pt"), b"\x80\x02ctorch\nFloatStorage\n)R.")
    # BINUNICODE8 (Python writes it only for strings over 4 GiB): the string "hi".
    pickle_only(os.path.join(OUT_DIR, "binunicode8.pt"), b"\x80\x04\x8d" + struct.pack("<Q", 2) + b"hi.")


def resource_bombs():
    # A list that contains itself, a tuple DAG that expands to 2**60 leaves, 1001 nested MARKs, and a
    # zero-stride view that would turn a 4-byte storage into 4 TiB.
    pickle_only(os.path.join(OUT_DIR, "self_reference.pt"), b"\x80\x02]q\x00h\x00a.")
    laughs = b"\x80\x02Nq\x00" + b"".join(bytes([0x68, k - 1, 0x86, 0x71, k]) for k in range(1, 61)) + b"."
    pickle_only(os.path.join(OUT_DIR, "billion_laughs.pt"), laughs)
    pickle_only(os.path.join(OUT_DIR, "deep_marks.pt"), b"\x80\x02" + b"(" * 1001 + b".")
    torch_save({"x": Tensor(Storage("f32", [1.0]), (2**40,), (0,))}, os.path.join(OUT_DIR, "broadcast_bomb.pt"),
               root="archive")


def malformed():
    conds_path = os.path.join(OUT_DIR, "conds.pt")
    with open(conds_path, "rb") as f:
        conds_bytes = f.read()
    with open(os.path.join(OUT_DIR, "truncated.pt"), "wb") as f:
        f.write(conds_bytes[: len(conds_bytes) // 2])
    with open(os.path.join(OUT_DIR, "not_a_zip.pt"), "wb") as f:
        f.write(b"this is not a zip archive, just text\n")
    write_archive(os.path.join(OUT_DIR, "missing_pkl.pt"), [("version", b"3\n")], "archive")

    # data.pkl cut inside a string: BINUNICODE announces 10 bytes, 3 follow.
    pickle_only(os.path.join(OUT_DIR, "truncated_pickle.pt"), b"\x80\x02}q\x00X\x0a\x00\x00\x00abc")
    pickle_only(os.path.join(OUT_DIR, "unknown_opcode.pt"), b"\x80\x02\xff.")
    pickle_only(os.path.join(OUT_DIR, "stack_underflow.pt"), b"\x80\x02K\x01s.")  # SETITEM needs three items
    pickle_only(os.path.join(OUT_DIR, "bad_memo.pt"), b"\x80\x02h\x05.")          # BINGET 5 with an empty memo
    pickle_only(os.path.join(OUT_DIR, "no_stop.pt"), b"\x80\x02K\x01")            # ends without STOP

    save = lambda name, obj: torch_save(obj, os.path.join(OUT_DIR, name), root="archive")
    save("short_storage.pt", {"x": Tensor(Storage("f32", [1.0, 2.0], declared_numel=100), (100,))})
    save("missing_storage.pt", {"x": Tensor(Storage("f32", [1.0, 2.0], write_record=False), (2,))})
    save("view_out_of_range.pt", {"x": Tensor(Storage("f32", [0.0] * 6), (3, 3), (3, 1))})
    save("negative_shape.pt", {"x": Tensor(Storage("f32", [0.0] * 6), (-1, 2), (2, 1))})
    save("overflow_shape.pt", {"x": Tensor(Storage("f32", [0.0] * 6), (2**62, 4), (4, 1))})
    save("negated_view.pt", {"x": Tensor(Storage("f32", [1.0]), (1,), metadata={"neg": True})})
    write_archive(os.path.join(OUT_DIR, "big_endian.pt"),
                  [("data.pkl", b"\x80\x02N."), ("byteorder", b"big"), ("version", b"3\n")], "archive")


if __name__ == "__main__":
    conds()
    views()
    dtypes_and_values()
    hostile()
    resource_bombs()
    malformed()
