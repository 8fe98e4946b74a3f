"""An in-process fake of the master (Master + Coordination) and of pservers, on stock gRPC servers
bound to 127.0.0.1, recording what the client sends. Refusals carry a google.rpc.Status with an
ErrorInfo in grpc-status-details-bin, encoded here by hand, as the Java services send them."""

import threading
from concurrent import futures

import grpc
import numpy as np

from paramserver import routing
from paramserver.client import co, co_grpc, ma, ma_grpc, pb, pb_grpc, tensor_pb2


def _len(n, data):
    out, v = bytearray([(n << 3) | 2]), len(data)
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    return bytes(out) + bytes([v]) + data


def status_details(code, message, reason, metadata=None):
    info = _len(1, reason.encode()) + _len(2, b"paramserver.dev") + b"".join(
        _len(3, _len(1, k.encode()) + _len(2, v.encode())) for k, v in (metadata or {}).items())
    any_ = _len(1, b"type.googleapis.com/google.rpc.ErrorInfo") + _len(2, info)
    return bytes([8, code.value[0]]) + _len(2, message.encode()) + _len(3, any_)


def refuse(context, code, message, reason, metadata=None):
    context.set_trailing_metadata((("grpc-status-details-bin", status_details(code, message, reason, metadata)),))
    context.abort(code, message)


class Pserver(pb_grpc.ParameterServerServicer):
    """Applies pushes once per (trainer, session, origin, step, part), SGD with learning rate 1 on
    blocks and on rows (which start at 0). With `slot_map` (a routing.SlotMap) set, it refuses a push
    or pull naming a row or block the map gives another pserver with MOVED at the map's epoch,
    after the duplicate check (as the Java pserver), nothing of it applied."""

    def __init__(self, index, pservers=1):
        self.index, self.values, self.initialised, self.init_id, self.step = index, {}, False, "", 0
        self.pservers, self.slot_map, self.rows, self.widths = pservers, None, {}, {}
        self.fail_if = lambda req: True  # which pushes fail_pushes applies to
        self.applied, self.pushes, self.pulls, self.fail_pushes, self.lock = set(), [], [], 0, threading.Lock()
        self.overload_pushes = 0  # pushes refused OVERLOADED (at a limit, nothing applied) first

    def InitParameters(self, req, context):
        self.widths.update({p.name: int(p.shape[-1]) for p in req.parameters if p.sparse})
        for b in req.blocks:
            self.values[(b.name, b.block)] = np.frombuffer(b.data, "<f4").copy()
        self.init_id = req.init_id
        return pb.InitParametersResponse(blocks=len(self.values))

    def FinishInit(self, req, context):
        if req.expected_blocks != len(self.values):
            refuse(context, grpc.StatusCode.FAILED_PRECONDITION, "expected blocks", "BAD_ARGUMENT")
        self.initialised = True
        return pb.FinishInitResponse()

    def GetShardStatus(self, req, context):
        return pb.ShardStatus(index=self.index, initialised=self.initialised, init_id=self.init_id if self.initialised else "")

    def _check_moved(self, context, blocks, tables):
        m = self.slot_map
        if m is None:
            return
        owners = [m.owner_of_block(b.name, b.block) for b in blocks]
        owners += [m.owner_of_row(t.name, r) for t in tables for r in t.row_ids]
        other = next((o for o in owners if o != self.index), None)
        if other is not None:
            refuse(context, grpc.StatusCode.FAILED_PRECONDITION, "moved to pserver %d" % other, "MOVED",
                   {"owner": str(other), "epoch": str(m.epoch)})

    def _check_owned(self, context, tables):
        """Refuses rows of another pserver as the Java pserver does (WRONG_SHARD, nothing applied)."""
        if self.slot_map is not None:
            return
        for t in tables:
            for row in t.row_ids:
                owner = routing.owner_of_row(t.name, row, self.pservers)
                if owner != self.index:
                    refuse(context, grpc.StatusCode.FAILED_PRECONDITION,
                           "sparse table '%s' row %d belongs to pserver %d of %d, not to this pserver (%d)"
                           % (t.name, row, owner, self.pservers, self.index), "WRONG_SHARD",
                           {"owner": str(owner), "row": str(row), "table": t.name,
                            "pservers": str(self.pservers), "index": str(self.index)})

    def PushGradients(self, req, context):
        with self.lock:
            if not self.initialised:
                refuse(context, grpc.StatusCode.FAILED_PRECONDITION, "not initialised", "NOT_INITIALIZED")
            self.pushes.append(req)
            if self.overload_pushes > 0:
                self.overload_pushes -= 1
                refuse(context, grpc.StatusCode.RESOURCE_EXHAUSTED, "at a limit", "OVERLOADED",
                       {"limit": "calls", "retry_after_ms": "20"})
            identity = (req.trainer_id, req.session, req.origin, req.step, req.part)
            duplicate = identity in self.applied
            if not duplicate:
                self._check_owned(context, req.sparse_gradients)
                self._check_moved(context, req.gradients, req.sparse_gradients)
                self.applied.add(identity)
                self.step += 1
                for g in req.gradients:  # SGD, learning rate 1
                    self.values[(g.name, g.block)] -= np.frombuffer(g.data, "<f4")
                for t in req.sparse_gradients:
                    data = np.frombuffer(t.data, "<f4").reshape(len(t.row_ids), -1)
                    for r, g in zip(t.row_ids, data):
                        self.rows[(t.name, r)] = self.rows.get((t.name, r), np.zeros(len(g), "<f4")) - g
            if self.fail_pushes > 0 and self.fail_if(req):  # applied, but the answer is lost
                self.fail_pushes -= 1
                context.abort(grpc.StatusCode.UNAVAILABLE, "connection reset")
            blocks = [self._block(g.name, g.block, g.offset) for g in req.gradients] if req.return_values else []
            rows = [pb.SparseRows(name=t.name, row_ids=t.row_ids, dtype=tensor_pb2.FLOAT32, data=np.array(
                [self._row(t.name, i) for i in t.row_ids], "<f4").tobytes())
                for t in req.sparse_gradients] if req.return_rows else []
            return pb.PushGradientsResponse(step=self.step, duplicate=duplicate, blocks=blocks, sparse_rows=rows)

    def _row(self, table, row):
        """A row's value: one never pushed reads as [id, id, ...] (the table's width, default 2); the
        first push starts it from zeros."""
        return self.rows.get((table, row), np.full(self.widths.get(table, 2), float(row), "<f4"))

    def _block(self, name, block, offset):
        return tensor_pb2.TensorBlock(name=name, block=block, offset=offset, dtype=tensor_pb2.FLOAT32,
                                      data=self.values[(name, block)].tobytes())

    def PullParameters(self, req, context):
        self.pulls.append(req)
        if not self.initialised:
            refuse(context, grpc.StatusCode.FAILED_PRECONDITION, "not initialised", "NOT_INITIALIZED")
        self._check_owned(context, req.sparse_rows)
        self._check_moved(context, req.blocks, req.sparse_rows)
        rows = [pb.SparseRows(name=r.name, row_ids=r.row_ids, dtype=tensor_pb2.FLOAT32, data=np.array(
                    [self._row(r.name, i) for i in r.row_ids], "<f4").tobytes())
                for r in req.sparse_rows]
        return pb.PullParametersResponse(step=self.step, sparse_rows=rows, blocks=[
            self._block(b.name, b.block, self.offsets[(b.name, b.block)]) for b in req.blocks])


class Master(ma_grpc.MasterServicer, co_grpc.CoordinationServicer):
    def __init__(self, pservers, block_size=4, tasks=2):
        self.pservers, self.block_size, self.model, self.mode = pservers, block_size, None, pb.ASYNC
        self.joins, self.heartbeats, self.lock_holder, self.done, self.finished = [], 0, None, "", []
        self.todo = [ma.Task(id=i, epoch=1) for i in range(tasks)]
        self.attending = threading.Event()
        # what the cluster map says: the committed placement, the move in progress, the registered
        # indexes (None: all); publish() sends a new map on every Attend stream
        self.placement = self.move = self.registered = None
        self.revision, self.changed = 1, threading.Condition()

    def publish(self, **kw):
        """Sets placement (a PlacementMap or None), move (a SlotMove or None) and/or registered."""
        with self.changed:
            for k, v in kw.items():
                setattr(self, k, v)
            self.revision += 1
            self.changed.notify_all()

    def cluster_map(self, trainer_id):
        m = co.ClusterMap(revision=self.revision, pservers_desired=len(self.pservers), pservers=[
            co.PserverEntry(index=i, address=a) for i, (a, _) in enumerate(self.pservers)
            if self.registered is None or i in self.registered], trainers=[trainer_id])
        if self.placement is not None:
            m.placement.CopyFrom(self.placement)
        if self.move is not None:
            m.placement_move.CopyFrom(self.move)
        return m

    def Join(self, req, context):
        self.joins.append(req)
        if self.model is not None and req.parameters and list(req.parameters) != self.model:
            refuse(context, grpc.StatusCode.FAILED_PRECONDITION,
                   "parameter 'out.w' has shape [4, 3], the job's has [4, 2]", "MODEL_MISMATCH")
        if self.model is None:
            self.model, self.mode = list(req.parameters), req.mode
        return co.JoinResponse(trainer_id=req.trainer_id or "assigned-1", parameters=self.model,
                               mode=self.mode, heartbeat_ms=50, lease_ttl_ms=1000, job="fake")

    def Attend(self, request_iterator, context):
        first = next(request_iterator)
        assert first.trainer_id and first.session
        self.attending.set()
        done = threading.Event()

        def heartbeats():
            try:
                for _ in request_iterator:
                    self.heartbeats += 1
            except grpc.RpcError:  # the stream was cancelled
                pass
            done.set()
            with self.changed:
                self.changed.notify_all()
        threading.Thread(target=heartbeats, daemon=True).start()
        sent = None
        while not done.is_set() and context.is_active():
            with self.changed:
                if sent == self.revision:
                    self.changed.wait(0.2)
                    continue
                sent, m = self.revision, self.cluster_map(first.trainer_id)
            yield m
        self.attending.clear()

    def GetPlacement(self, req, context):
        if not self.attending.is_set():
            refuse(context, grpc.StatusCode.FAILED_PRECONDITION, "attend first", "NOT_JOINED")
        blocks, n = [], len(self.pservers)
        for p in self.model:
            if p.sparse:
                continue
            size = int(np.prod(p.shape))
            for b, off in enumerate(range(0, size, self.block_size)):
                blocks.append(co.BlockPlacement(name=p.name, block=b, offset=off,
                                                length=min(self.block_size, size - off), pserver=(b + len(p.name)) % n))
        for _, ps in self.pservers:
            ps.offsets = {(b.name, b.block): b.offset for b in blocks}
        return co.Placement(pservers=n, blocks=blocks, sparse_tables=[
            co.SparseTablePlacement(name=p.name, width=p.shape[-1]) for p in self.model if p.sparse])

    def AcquireLock(self, req, context):
        R = co.AcquireLockResponse
        if req.lock == co.EVALUATE_PASS:
            return R(outcome=R.GRANTED)
        if self.done:
            return R(outcome=R.DONE, done=self.done)
        if self.lock_holder in (None, req.trainer_id):
            self.lock_holder = req.trainer_id
            return R(outcome=R.GRANTED)
        return R(outcome=R.HELD, holder=self.lock_holder)

    def ReleaseLock(self, req, context):
        self.done, self.lock_holder = req.done, None
        return co.ReleaseLockResponse()

    def GetTask(self, req, context):
        R = ma.GetTaskResponse
        if self.todo:
            return R(outcome=R.TASK, task=self.todo.pop(0))
        return R(outcome=R.JOB_FINISHED, total_passes=1)

    def TaskFinished(self, req, context):
        self.finished.append(req)
        return ma.TaskFinishedResponse(accepted=True)

    def SetDataset(self, req, context):
        self.dataset = req
        return ma.SetDatasetResponse(files=1, tasks=len(self.todo), passes=1)

    def ReportEvaluation(self, req, context):
        self.evaluation = req
        return ma.ReportEvaluationResponse()

    def GetStatus(self, req, context):
        return ma.JobStatus(master_id="leader")

    def TaskFailed(self, req, context):
        self.finished.append(req)
        return ma.TaskFailedResponse(accepted=True)


def serve(*servicers):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    for s in servicers:
        if isinstance(s, Pserver):
            pb_grpc.add_ParameterServerServicer_to_server(s, server)
        else:
            ma_grpc.add_MasterServicer_to_server(s, server)
            co_grpc.add_CoordinationServicer_to_server(s, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, "127.0.0.1:%d" % port


class Cluster:
    """A fake master and `n` fake pservers; .address is the master's."""

    def __init__(self, n=2, **kw):
        self.pservers, self.servers = [], []
        for i in range(n):
            ps = Pserver(i, n)
            server, addr = serve(ps)
            self.servers.append(server)
            self.pservers.append((addr, ps))
        self.master = Master(self.pservers, **kw)
        server, self.address = serve(self.master)
        self.servers.append(server)

    def close(self):
        for s in self.servers:
            s.stop(0)
