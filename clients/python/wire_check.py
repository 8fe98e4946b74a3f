#!/usr/bin/env python3
"""A pserver client that knows nothing of paramserver's code: stock gRPC for Python and the
message classes protoc generates from the repository's .proto files.

It initialises one pserver with three parameters (a dense SGD-with-momentum tensor cut into three
blocks larger than one HTTP/2 frame, a dense Adam tensor, a sparse SGD table), pushes gradients
(unary calls, one with return_values, then a StreamPushes stream that also carries a pull between
its pushes), resends one push (a duplicate),
sends two bad pushes (a gradient of the wrong length, a NaN), pulls everything back, then pushes
with return_rows and a writer_tag (answers cut to the rows another writer changed: the same writer's
second push of its rows gets back only the row it had not pushed, another writer's gets all), and
pulls with a writer_tag and held rows (cut the same way).

Every request it sends is written to OUT as it was serialized, with the answer or the error it got,
listed in OUT/manifest.tsv (call, request file, "ok" and answer file, or "error" and the gRPC code
and the ErrorInfo reason). A caller replays the requests on a shard of its own and compares answers.

Usage: wire_check.py --target HOST:PORT --gen DIR --out DIR
  DIR of --gen holds the output of: protoc --python_out=DIR -I common-proto/src/main/proto \
      paramserver/v1/*.proto
Needs python3-grpcio and python3-protobuf (Debian packages of the same names).
"""

import argparse
import array
import os
import random
import sys

import grpc

SERVICE = "/paramserver.v1.ParameterServer/"
TRAINER = "foreign-python"
SESSION = "py-run-1"
INIT_ID = "foreign-init-1"
SGD_SIZE = 300_000  # three blocks: 131072, 131072, 37856 floats
SGD_BLOCK = 131_072
ADAM_SIZE = 70_000
WIDTH = 16
ROW_IDS = [7, 1 << 40, 3, 123_456_789]


def floats(rnd, n, scale):
    a = array.array("f", (rnd.uniform(-scale, scale) for _ in range(n)))
    if sys.byteorder != "little":
        a.byteswap()
    return a.tobytes()


class Client:
    def __init__(self, target, out, pb):
        self.channel = grpc.insecure_channel(
            target,
            options=[
                ("grpc.max_send_message_length", 64 << 20),
                ("grpc.max_receive_message_length", 64 << 20),
            ],
        )
        self.out = out
        self.pb = pb
        self.count = 0
        self.manifest = open(os.path.join(out, "manifest.tsv"), "w", encoding="utf-8")

    def _file(self, suffix, message):
        name = "%03d.%s" % (self.count, suffix)
        with open(os.path.join(self.out, name), "wb") as f:
            f.write(message.SerializeToString())
        return name

    def unary(self, method, request, response_type):
        self.count += 1
        sent = self._file("req", request)
        call = self.channel.unary_unary(
            SERVICE + method,
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=response_type.FromString,
        )
        try:
            answer = call(request, timeout=30)
        except grpc.RpcError as e:
            self.manifest.write("%s\t%s\terror\t%s\t%s\n" % (method, sent, e.code().name, reason(e)))
            return None
        self.manifest.write("%s\t%s\tok\t%s\n" % (method, sent, self._file("ans", answer)))
        return answer

    def stream(self, requests):
        """StreamPushes: every request in order on one stream; one answer per request."""
        call = self.channel.stream_stream(
            SERVICE + "StreamPushes",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=self.pb.PushGradientsResponse.FromString,
        )
        answers = list(call(iter(requests), timeout=30))
        if len(answers) != len(requests):
            raise SystemExit("StreamPushes answered %d of %d pushes" % (len(answers), len(requests)))
        for request, answer in zip(requests, answers):
            self.count += 1
            sent = self._file("req", request)
            self.manifest.write("StreamPushes\t%s\tok\t%s\n" % (sent, self._file("ans", answer)))

    def close(self):
        self.manifest.close()
        self.channel.close()


def fields(data):
    """(field number, wire type, value) of a serialized message; values of wire type 2 as bytes."""
    i = 0
    while i < len(data):
        key, i = varint(data, i)
        number, kind = key >> 3, key & 7
        if kind == 0:
            value, i = varint(data, i)
        elif kind == 2:
            n, i = varint(data, i)
            value, i = data[i:i + n], i + n
        elif kind == 5:
            value, i = data[i:i + 4], i + 4
        elif kind == 1:
            value, i = data[i:i + 8], i + 8
        else:
            raise ValueError("wire type %d" % kind)
        yield number, kind, value


def varint(data, i):
    shift = result = 0
    while True:
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7


def reason(error):
    """The ErrorInfo reason of a refusal, read from the google.rpc.Status in the trailer
    grpc-status-details-bin (Status.details = 3, Any.type_url = 1, Any.value = 2,
    ErrorInfo.reason = 1), or '-'."""
    for key, value in error.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        for number, _, detail in fields(value):
            if number != 3:
                continue
            parts = {n: v for n, _, v in fields(detail)}
            if parts.get(1, b"").endswith(b"google.rpc.ErrorInfo"):
                for n, _, v in fields(parts.get(2, b"")):
                    if n == 1:
                        return v.decode("utf-8")
    return "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    # a stock client: the stubs protoc made, never the project's package that sits beside this script
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [args.gen] + [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    from paramserver.v1 import optimizer_pb2, pserver_pb2, tensor_pb2

    class Pb:
        pass

    pb = Pb()
    pb.PushGradientsResponse = pserver_pb2.PushGradientsResponse
    os.makedirs(args.out, exist_ok=True)
    rnd = random.Random(20261202)
    c = Client(args.target, args.out, pb)

    sgd = optimizer_pb2.OptimizerConfig(
        kind=optimizer_pb2.OptimizerConfig.SGD, learning_rate=0.25, momentum=0.9
    )
    adam = optimizer_pb2.OptimizerConfig(
        kind=optimizer_pb2.OptimizerConfig.ADAM,
        learning_rate=0.01,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-8,
    )
    specs = [
        pserver_pb2.ParameterSpec(
            name="w.sgd", shape=[SGD_SIZE], dtype=tensor_pb2.FLOAT32,
            block_size=SGD_BLOCK, optimizer=sgd),
        pserver_pb2.ParameterSpec(
            name="w.adam", shape=[700, 100], dtype=tensor_pb2.FLOAT32,
            block_size=ADAM_SIZE, optimizer=adam),
        pserver_pb2.ParameterSpec(
            name="emb", shape=[0, WIDTH], dtype=tensor_pb2.FLOAT32,
            optimizer=sgd, sparse=True),
    ]
    dense = [("w.sgd", b, min(SGD_BLOCK, SGD_SIZE - b * SGD_BLOCK)) for b in range(3)]
    dense.append(("w.adam", 0, ADAM_SIZE))

    def block(name, b, n, scale):
        offset = b * (SGD_BLOCK if name == "w.sgd" else ADAM_SIZE)
        return tensor_pb2.TensorBlock(
            name=name, block=b, offset=offset, dtype=tensor_pb2.FLOAT32, data=floats(rnd, n, scale))

    init = pserver_pb2.InitParametersRequest(
        trainer_id=TRAINER, parameters=specs, init_id=INIT_ID,
        blocks=[block(name, b, n, 1.0) for name, b, n in dense])
    c.unary("InitParameters", init, pserver_pb2.InitParametersResponse)
    c.unary(
        "FinishInit",
        pserver_pb2.FinishInitRequest(trainer_id=TRAINER, init_id=INIT_ID, expected_blocks=len(dense)),
        pserver_pb2.FinishInitResponse)

    def push(step, return_values=False, **extra):
        ids = ROW_IDS[step % 2:] if step % 3 else ROW_IDS
        rows = pserver_pb2.SparseRows(
            name="emb", row_ids=ids, dtype=tensor_pb2.FLOAT32,
            data=floats(rnd, len(ids) * WIDTH, 0.5))
        return pserver_pb2.PushGradientsRequest(
            trainer_id=TRAINER, session=SESSION, step=step, return_values=return_values,
            gradients=[block(name, b, n, 0.1) for name, b, n in dense],
            sparse_gradients=[rows], **extra)

    for step in (1, 2, 3):
        c.unary("PushGradients", push(step, return_values=step == 2), pserver_pb2.PushGradientsResponse)
    # the same identity again: a duplicate, nothing applied
    resent = pserver_pb2.PushGradientsRequest()
    resent.CopyFrom(push(2))
    c.unary("PushGradients", resent, pserver_pb2.PushGradientsResponse)
    # bad pushes: a block of the wrong length, a NaN
    short = push(4)
    short.gradients[0].data = short.gradients[0].data[:-4]
    c.unary("PushGradients", short, pserver_pb2.PushGradientsResponse)
    nan = push(4)
    data = bytearray(nan.gradients[3].data)
    data[0:4] = array.array("f", [float("nan")]).tobytes()
    nan.gradients[3].data = bytes(data)
    c.unary("PushGradients", nan, pserver_pb2.PushGradientsResponse)
    pull = pserver_pb2.PullParametersRequest(
        trainer_id=TRAINER,
        blocks=[tensor_pb2.BlockRef(name=name, block=b) for name, b, _ in dense],
        sparse_rows=[pserver_pb2.SparseRowsRef(name="emb", row_ids=ROW_IDS)])
    # the stream: steps 4..6, the last returning values, acknowledged_through set (windowed), and
    # between steps 5 and 6 a pull (answered in its turn with the values after step 5)
    c.stream([push(4, acknowledged_through=3), push(5, acknowledged_through=3),
              pserver_pb2.PushGradientsRequest(pull=pull),
              push(6, return_values=True, acknowledged_through=3)])

    c.unary("PullParameters", pull, pserver_pb2.PullParametersResponse)
    # writer tags: step 7 pushes ROW_IDS[1:], step 8 all of ROW_IDS under the same tag, step 9 all
    # of them under another writer's tag
    for step, tag in ((7, 0x5EED), (8, 0x5EED), (9, 0xBEEF)):
        tagged = push(step)
        tagged.return_rows = True
        tagged.writer_tag = tag
        c.unary("PushGradients", tagged, pserver_pb2.PushGradientsResponse)
    # pulls under a writer tag, the first three rows held: the writer of step 9 gets back only the
    # row it does not hold; the writer of steps 7 and 8 gets all four (another writer changed them)
    for tag, held in ((0xBEEF, 3), (0x5EED, 4)):
        tagged = pserver_pb2.PullParametersRequest(
            trainer_id=TRAINER, writer_tag=tag,
            sparse_rows=[pserver_pb2.SparseRowsRef(name="emb", row_ids=ROW_IDS, held=held)])
        c.unary("PullParameters", tagged, pserver_pb2.PullParametersResponse)
    c.close()
    print("wire_check: %d calls, manifest in %s" % (c.count, args.out))


if __name__ == "__main__":
    main()
