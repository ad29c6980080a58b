"""Write a small 4-rank Chakra trace the way Chakra's generator scripts do.

This is a fixture for podsim's Chakra reader. Each rank's file,
generator.<rank>.et, is a stream of messages, each one preceded by the varint
of its serialized length (the framing of Chakra's protolib encodeMessage):
first a GlobalMetadata with version "0.0.4", then the Node messages. The
protobuf wire format is produced by the small encoder below, which is written
from the wire-format rules and shares nothing with podsim's schema code, so
the reader is tested against bytes that podsim did not produce. The script
also writes generator.comm_groups.json, which maps process-group names to
ranks.

interop/testdata/generator/ holds the committed output; regenerate it with

python3 interop/testdata/write_generator_trace.py interop/testdata/generator
"""

import json
import struct
import sys
from pathlib import Path

# Wire types.
VARINT = 0
I64 = 1
LEN = 2

# ChakraProtoMsg.NodeType.
METADATA_NODE = 1
MEM_LOAD_NODE = 2
MEM_STORE_NODE = 3
COMP_NODE = 4
COMM_SEND_NODE = 5
COMM_RECV_NODE = 6
COMM_COLL_NODE = 7

# ChakraProtoMsg.CollectiveCommType.
ALL_REDUCE = 0
ALL_GATHER = 2
BROADCAST = 5
ALL_TO_ALL = 6
REDUCE_SCATTER = 7
BARRIER = 9

# Field numbers inside AttributeProto's value oneof.
ATTR_FIELDS = {
    "double": 3,
    "int32": 7,
    "int64": 9,
    "int64_list": 10,
    "uint32": 11,
    "uint64": 13,
    "bool": 27,
    "bool_list": 28,
    "string": 29,
}

MIB = 1048576
NUM_RANKS = 4
COMM_GROUPS = {"1": [0, 1], "2": [2, 3], "3": [0, 2], "4": [1, 3]}


def varint(value: int) -> bytes:
    """Encode an integer as a base-128 varint.

    A negative value is encoded as its 64-bit two's complement, which
    takes 10 bytes (what int32 and int64 fields do on the wire).
    """
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def tag(field: int, wire_type: int) -> bytes:
    return varint((field << 3) | wire_type)


def varint_field(field: int, value: int) -> bytes:
    return tag(field, VARINT) + varint(value)


def double_field(field: int, value: float) -> bytes:
    return tag(field, I64) + struct.pack("<d", value)


def len_field(field: int, payload: bytes) -> bytes:
    return tag(field, LEN) + varint(len(payload)) + payload


def string_field(field: int, value: str) -> bytes:
    return len_field(field, value.encode("utf-8"))


def packed_field(field: int, values: list[int]) -> bytes:
    """Encode a repeated varint field in packed form; nothing if empty."""
    if not values:
        return b""
    return len_field(field, b"".join(varint(v) for v in values))


def attr(name: str, kind: str, value: object) -> bytes:
    """Encode an AttributeProto. The oneof value is written even if it is 0."""
    field = ATTR_FIELDS[kind]
    out = string_field(1, name)
    if kind == "double":
        out += double_field(field, float(value))
    elif kind == "string":
        out += string_field(field, str(value))
    elif kind in ("bool_list", "int64_list"):
        # BoolList / Int64List: repeated values = 1, packed.
        out += len_field(field, packed_field(1, [int(v) for v in value]))
    else:
        out += varint_field(field, int(value))
    return out


def node(node_id: int, name: str, node_type: int,
         ctrl_deps: tuple[int, ...] = (), data_deps: tuple[int, ...] = (),
         duration_micros: int = 0, attrs: tuple[bytes, ...] = ()) -> bytes:
    """Encode a Node, leaving out fields that hold their proto3 default."""
    out = b""
    if node_id:
        out += varint_field(1, node_id)
    if name:
        out += string_field(2, name)
    if node_type:
        out += varint_field(3, node_type)
    out += packed_field(4, list(ctrl_deps))
    out += packed_field(5, list(data_deps))
    if duration_micros:
        out += varint_field(7, duration_micros)
    for a in attrs:
        out += len_field(10, a)
    return out


def global_metadata(version: str) -> bytes:
    return string_field(1, version)


def rank_nodes(rank: int) -> list[bytes]:
    """The Node messages of one rank, in file order (node 6 after node 7)."""
    tp_pg = "1" if rank < 2 else "2"
    dp_pg = "3" if rank % 2 == 0 else "4"
    cpu_false = attr("is_cpu_op", "bool", False)

    n1 = node(1, "process_group:init", METADATA_NODE,
              attrs=(attr("pg_desc", "string", "tp,dp"),))
    n2 = node(2, "fwd_gemm", COMP_NODE, data_deps=(1,), duration_micros=100,
              attrs=(cpu_false,
                     attr("num_ops", "int64", 2000000000000),
                     attr("tensor_size", "uint64", 1000000000)))
    n3 = node(3, "aten::linear", COMP_NODE, ctrl_deps=(2,),
              duration_micros=500,
              attrs=(attr("is_cpu_op", "bool", True),))
    n4 = node(4, "tp_allreduce", COMM_COLL_NODE, data_deps=(2,),
              attrs=(cpu_false,
                     attr("comm_type", "int64", ALL_REDUCE),
                     attr("comm_size", "int64", 64 * MIB),
                     attr("pg_name", "string", tp_pg),
                     attr("involved_dim", "bool_list", [True, True]),
                     attr("comm_priority", "int32", 0)))
    n5 = node(5, "roofline_op", COMP_NODE, data_deps=(4,),
              attrs=(cpu_false,
                     attr("num_ops", "int64", 1000000000000),
                     attr("tensor_size", "uint64", 1000000000)))
    n6 = node(6, "load_weights", MEM_LOAD_NODE, data_deps=(1,),
              attrs=(attr("tensor_size", "uint64", 1073741824),))
    # Some generators write comm_size unsigned.
    n7 = node(7, "dp_allgather", COMM_COLL_NODE, data_deps=(5, 6),
              attrs=(cpu_false,
                     attr("comm_type", "int64", ALL_GATHER),
                     attr("comm_size", "uint64", 32 * MIB),
                     attr("pg_name", "string", dp_pg)))
    n8 = node(8, "dp_reducescatter", COMM_COLL_NODE, data_deps=(7,),
              attrs=(attr("comm_type", "int64", REDUCE_SCATTER),
                     attr("comm_size", "int64", 64 * MIB),
                     attr("pg_name", "string", dp_pg)))
    n9 = node(9, "world_alltoall", COMM_COLL_NODE, data_deps=(8,),
              attrs=(attr("comm_type", "int64", ALL_TO_ALL),
                     attr("comm_size", "int64", 16 * MIB)))
    n10 = node(10, "tp_broadcast", COMM_COLL_NODE, data_deps=(9,),
               attrs=(attr("comm_type", "int64", BROADCAST),
                      attr("comm_size", "int64", 1 * MIB),
                      attr("pg_name", "string", tp_pg)))
    n11 = node(11, "barrier", COMM_COLL_NODE, data_deps=(10,),
               attrs=(attr("comm_type", "int64", BARRIER),
                      attr("comm_size", "int64", 0)))
    if rank < 2:
        n12 = node(12, "send_act", COMM_SEND_NODE, data_deps=(11,),
                   attrs=(attr("comm_src", "int32", rank),
                          attr("comm_dst", "int32", rank + 2),
                          attr("comm_tag", "int32", 7),
                          attr("comm_size", "int64", 8 * MIB)))
    else:
        n12 = node(12, "recv_act", COMM_RECV_NODE, data_deps=(11,),
                   attrs=(attr("comm_src", "int32", rank - 2),
                          attr("comm_dst", "int32", rank),
                          attr("comm_tag", "int32", 7),
                          attr("comm_size", "int64", 8 * MIB)))
    n13 = node(13, "store_ckpt", MEM_STORE_NODE, data_deps=(12,),
               attrs=(attr("tensor_size", "uint64", 536870912),))
    n14 = node(14, "after_store", COMP_NODE, ctrl_deps=(13,),
               duration_micros=50,
               attrs=(cpu_false,
                      attr("op_schema", "string",
                           "aten::mul(Tensor a) -> Tensor")))
    return [n1, n2, n3, n4, n5, n7, n6, n8, n9, n10, n11, n12, n13, n14]


def frame(message: bytes) -> bytes:
    """Prefix a serialized message with its varint length (encodeMessage)."""
    return varint(len(message)) + message


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} OUTDIR", file=sys.stderr)
        return 2
    outdir = Path(argv[1])
    outdir.mkdir(parents=True, exist_ok=True)
    for rank in range(NUM_RANKS):
        messages = [global_metadata("0.0.4")] + rank_nodes(rank)
        data = b"".join(frame(m) for m in messages)
        (outdir / f"generator.{rank}.et").write_bytes(data)
    groups = json.dumps(COMM_GROUPS, sort_keys=True) + "\n"
    (outdir / "generator.comm_groups.json").write_bytes(groups.encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
