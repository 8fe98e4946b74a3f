"""The trainer's client: the master (dataset, tasks), its Coordination service (membership, cluster
map, placement, locks) and the pservers (init, push, pull). No etcd client. Not thread-safe: one
training thread calls it (a background thread keeps the membership alive)."""

import concurrent.futures
import logging
import platform
import threading
import time
import uuid

import grpc
import numpy as np

from . import elastic, errors, gen, routing
from .errors import CallOrderError, ParamServerError

gen.ensure()
from .v1 import coordination_pb2 as co, coordination_pb2_grpc as co_grpc  # noqa: E402
from .v1 import master_pb2 as ma, master_pb2_grpc as ma_grpc  # noqa: E402
from .v1 import optimizer_pb2, placement_pb2, pserver_pb2 as pb, pserver_pb2_grpc as pb_grpc, tensor_pb2  # noqa: E402,F401

log = logging.getLogger("paramserver")
ASYNC, SYNC, BOUNDED_STALENESS = pb.ASYNC, pb.SYNC, pb.BOUNDED_STALENESS
OPTIONS = [("grpc.max_send_message_length", 64 << 20), ("grpc.max_receive_message_length", 64 << 20)]
TRANSIENT = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
WAIT_HOLD_MS = 1000  # as the Java trainer's PassRunner
BLOCK_SIZE = 262144  # elements per block, the Java trainer's default (1 MiB)
LOOK_AGAIN_S = 0.5  # waiting for a placement epoch, the cluster map is looked at again this often


def optimizer(kind="sgd", learning_rate=0.1, momentum=0.0, weight_decay=0.0, beta1=0.9, beta2=0.999,
              epsilon=0.0, rho=0.0, initial_accumulator=0.0, clip_value=0.0, clip_norm=0.0):
    """An OptimizerConfig (run on the pservers) built as the Java trainer builds it from its
    settings, defaults included, so that a Python and a Java trainer of one job send equal specs.
    kind: sgd, momentum, nesterov, adam, adamw, adagrad, rmsprop or adadelta."""
    K = optimizer_pb2.OptimizerConfig
    kinds = {"sgd": K.SGD, "momentum": K.SGD, "nesterov": K.SGD, "adam": K.ADAM, "adamw": K.ADAMW,
             "adagrad": K.ADAGRAD, "rmsprop": K.RMSPROP, "adadelta": K.ADADELTA}
    if kind not in kinds:
        raise ValueError("optimizer %r is not one of %s" % (kind, ", ".join(kinds)))
    if kind in ("momentum", "nesterov") and momentum == 0:
        momentum = 0.9
    return K(kind=kinds[kind], learning_rate=learning_rate, momentum=momentum, nesterov=kind == "nesterov",
             weight_decay=weight_decay, beta1=beta1, beta2=beta2, epsilon=epsilon, rho=rho,
             initial_accumulator=initial_accumulator, clip_value=clip_value, clip_norm=clip_norm,
             schedule=optimizer_pb2.LearningRateSchedule(gamma=0.1))


def dense_spec(name, shape, block_size=BLOCK_SIZE, optimizer_config=None):
    """The ParameterSpec of a dense float32 parameter."""
    return pb.ParameterSpec(name=name, shape=list(shape), dtype=tensor_pb2.FLOAT32, block_size=block_size,
                            optimizer=optimizer_config or optimizer())


class Client:
    """Connects lazily. Order: join() -> init_parameters() -> set_dataset()/tasks(), push()/pull().

    masters: "host:port" or a list of them (leader and standbys); on NOT_LEADER or UNAVAILABLE the
    client tries the ErrorInfo's "leader" address, else the next one, for up to failover_s seconds.

    Elastic jobs (docs/explanation/elastic.md): requests are routed by the job's committed placement
    map (ClusterMap.placement, from the Attend stream; without one, the initial map of the pserver
    count, which is the fixed rule). A request a pserver refuses with MOVED (nothing of it applied)
    waits, at most timeout_s, until the map reaches the epoch named or that move is rolled back, is
    re-split by the map and each piece resent with the same identity, `origin` and a part of its own.
    """

    def __init__(self, masters, trainer_id="", timeout_s=10.0, failover_s=60.0, retry_s=300.0):
        self.masters = [m.strip() for m in (masters.split(",") if isinstance(masters, str) else masters)]
        if not self.masters or not all(self.masters):
            raise ValueError("masters must name at least one host:port, got %r" % (masters,))
        self.trainer_id, self.session = trainer_id, uuid.uuid4().hex
        self.timeout_s, self.failover_s, self.retry_s = timeout_s, failover_s, retry_s
        self.joined = self.placement = self.cluster_map = self.values = None
        self.step, self.current_pass, self.loss_every_records = 0, 0, 0
        self._leader, self._channels, self._held = 0, {}, {}
        self._cond, self._closed = threading.Condition(), threading.Event()
        self._sender = concurrent.futures.ThreadPoolExecutor(1, "paramserver-push")
        self._attend = self._call = self._stop = self._init_id = self._join_request = None
        self._map, self._plans, self._parts = None, {}, elastic.ResentParts()
        self.moved_requests = 0  # requests refused with MOVED and resent (re-split)

    # ---- plumbing ----
    def _channel(self, address):
        if address not in self._channels:
            self._channels[address] = grpc.insecure_channel(address, options=OPTIONS)
        return self._channels[address]

    def _require(self, method, joined=True, initialised=False):
        if self._closed.is_set():
            raise CallOrderError("%s() after close(): make a new Client" % method)
        if joined and self.joined is None:
            raise CallOrderError("%s() before join(): call client.join(parameters) first" % method)
        if initialised and self.values is None:
            raise CallOrderError("%s() before init_parameters(): call client.init_parameters(values) first" % method)

    def _master(self, stub, method, request, what, timeout_s=None, retry=("NOT_LEADER",)):
        """One call to the leader master, failing over (NOT_LEADER, UNAVAILABLE) for failover_s."""
        deadline, delay, tried = time.monotonic() + self.failover_s, 0.1, 0
        while True:
            address = self.masters[self._leader]
            try:
                call = getattr(stub(self._channel(address)), method)
                return call(request, timeout=timeout_s or self.timeout_s)
            except grpc.RpcError as e:
                err = errors.from_rpc_error(e, "%s (master %s)" % (what, address))
                if err.reason not in retry and err.code not in TRANSIENT or time.monotonic() > deadline:
                    raise err
                self._next_master(err.metadata.get("leader"))
                tried += 1
                if tried % len(self.masters) == 0 or err.reason == "NOT_JOINED":
                    time.sleep(delay)
                    delay = min(2 * delay, 2.0)

    def _next_master(self, leader=None):
        if leader and leader not in self.masters:
            self.masters.append(leader)
        self._leader = self.masters.index(leader) if leader else (self._leader + 1) % len(self.masters)

    def _coord(self, method, request, what):
        return self._master(co_grpc.CoordinationStub, method, request, what,
                            retry=("NOT_LEADER", "NOT_JOINED"))

    # ---- membership ----
    def join(self, parameters=(), mode=ASYNC, staleness=0, endpoint="", client=None):
        """Joins the job with the model `parameters` (ParameterSpecs; empty: the job's model as it is),
        keeps an Attend stream open on a background thread, and fetches the block placement.
        A model that differs from the job's raises ModelMismatch (the master names the difference)."""
        self._require("join", joined=False)
        if self.joined is not None:
            raise CallOrderError("join() twice: one Client joins once")
        self._join_request = co.JoinRequest(
            trainer_id=self.trainer_id, session=self.session, parameters=list(parameters), mode=mode,
            staleness=staleness, endpoint=endpoint,
            client=client or "python %s / paramserver-py" % platform.python_version())
        self.joined = self._coord("Join", self._join_request, "joining the job")
        self.trainer_id = self.joined.trainer_id
        self._attend = threading.Thread(target=self._attend_loop, name="paramserver-attend", daemon=True)
        self._attend.start()
        # the placement needs the pserver count the job wants (set once a pserver started)
        self._wait(lambda: self.cluster_map is not None and self.cluster_map.pservers_desired > 0,
                   "a cluster map with pservers_desired > 0 (Attend)")
        self.placement = self._coord("GetPlacement", co.GetPlacementRequest(trainer_id=self.trainer_id),
                                     "getting the placement")
        with self._cond:
            self._map = routing.SlotMap.initial(self.placement.blocks, self.placement.pservers)
        self._widths = {t.name: t.width for t in self.placement.sparse_tables}
        log.info("joined job %s as %s: %d parameters, %d pservers, mode %s, %r", self.joined.job,
                 self.trainer_id, len(self.joined.parameters), self.placement.pservers,
                 pb.TrainingMode.Name(self.joined.mode), self._routing())
        return self.joined

    # ---- elastic placement ----
    def _routing(self):
        """The SlotMap requests are planned by: the newest committed map the cluster map carried,
        else the initial map of the Placement's pserver count. One request uses one map throughout."""
        with self._cond:
            m = self.cluster_map
            if (self._map is not None and m is not None and m.HasField("placement")
                    and m.placement.epoch > self._map.epoch):
                try:
                    self._map = routing.SlotMap.from_proto(m.placement)
                    log.info("routing by placement epoch %d: %r", self._map.epoch, self._map)
                except ValueError as e:
                    log.error("cannot route by placement epoch %d: %s", m.placement.epoch, e)
            return self._map

    def _plan(self, sync=False):
        """{pserver: [group, ...]} of the dense blocks under the current map (cached per epoch)."""
        m = self._routing()
        key = (m.epoch, sync)
        if key not in self._plans:
            self._plans = {k: v for k, v in self._plans.items() if k[0] == m.epoch}
            self._plans[key] = routing.plan(self.placement.blocks, m.pservers, sync=sync, slot_map=m)
        return self._plans[key]

    def _settle(self, moved, refusals):
        """Waits, at most timeout_s, until the request `moved` refused may be re-split: the map
        routes by the epoch it names, or that move was rolled back (none of that epoch in progress
        and the committed epoch below it). The second and later refusals of one request first wait
        a growing backoff, so a placement that does not settle is never spun on."""
        if refusals:
            time.sleep(min(0.05 * 2 ** refusals, 2.0))
        epoch = _number(moved.metadata.get("epoch"), 0)
        deadline = time.monotonic() + self.timeout_s
        with self._cond:
            while True:
                if self._routing().epoch >= epoch:
                    return True
                m = self.cluster_map
                committed = m.placement.epoch if m is not None and m.HasField("placement") else 0
                moving = m is not None and m.HasField("placement_move") and m.placement_move.epoch == epoch
                if committed < epoch and not moving:
                    log.info("%s, but that move was rolled back: routing by epoch %d", moved, self._map.epoch)
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    log.warning("%s, but no placement epoch %d came within %.1f s: resending by %r",
                                moved, epoch, self.timeout_s, self._map)
                    return False
                self._cond.wait(min(left, LOOK_AGAIN_S))

    def _send(self, ps, method, request, what, first=None, refusals=0):
        """_call_ps; a push or pull refused with MOVED is re-split by the map and its pieces sent
        (each until it is answered, again so if refused again); the answer is the pieces' together."""
        try:
            return self._call_ps(ps, method, request, what, first)
        except errors.Moved as moved:
            if method not in ("PushGradients", "PullParameters"):
                raise
            self.moved_requests += 1
            self._settle(moved, refusals)
            m = self._routing()
            push = method == "PushGradients"
            pieces = (elastic.split_push(ps, request, m, self._parts.next) if push
                      else elastic.split_pull(request, m))
            log.info("%s: resending it as %d piece(s) by placement epoch %d", moved, len(pieces), m.epoch)
            answers = [self._send(p, method, piece, what, refusals=refusals + 1) for p, piece in pieces]
            return elastic.merge(answers, pb.PushGradientsResponse if push else pb.PullParametersResponse, push)

    def _heartbeats(self, stop):
        yield co.AttendRequest(trainer_id=self.trainer_id, session=self.session)
        while not stop.wait(max(self.joined.heartbeat_ms, 50) / 1000.0):
            yield co.AttendRequest()

    def _attend_loop(self):
        delay, first = 0.2, True
        while not self._closed.is_set():
            stop = self._stop = threading.Event()
            try:
                if not first:  # a reconnect: join again (same id and session), then attend again
                    self._coord("Join", self._join_request, "joining the job again")
                first = False
                stub = co_grpc.CoordinationStub(self._channel(self.masters[self._leader]))
                self._call = stub.Attend(self._heartbeats(stop))
                for cluster_map in self._call:
                    with self._cond:
                        self.cluster_map = cluster_map
                        self._cond.notify_all()
                    delay = 0.2
            except grpc.RpcError as e:
                err = errors.from_rpc_error(e, "attending")
                if not self._closed.is_set():
                    log.warning("%s; reconnecting", err)
                    if err.reason == "NOT_LEADER" or err.code in TRANSIENT:
                        self._next_master(err.metadata.get("leader"))
            except ParamServerError as err:
                log.warning("re-joining failed: %s; retrying", err)
            finally:
                stop.set()
            self._closed.wait(delay)
            delay = min(2 * delay, 5.0)

    def _wait(self, condition, what, timeout_s=None):
        with self._cond:
            if not self._cond.wait_for(condition, timeout_s or self.retry_s):
                raise ParamServerError("timed out after %.0f s waiting for %s" % (timeout_s or self.retry_s, what))

    # ---- pservers ----
    def _pserver(self, ps):
        """The stub of pserver `ps` once it is registered. One that is not and owns nothing in the
        committed map (emptied by a shrink, then shut down) is taken as having answered MOVED at the
        committed epoch: the request goes to the owners the map names."""
        def address():
            m = self.cluster_map
            return next((p.address for p in m.pservers if p.index == ps and p.address), None) if m else None

        def emptied():
            r = self._routing()
            return r is not None and r.epoch > 0 and not r.owns_anything(ps)
        self._wait(lambda: address() is not None or emptied(), "pserver %d to register" % ps)
        with self._cond:
            a = address()
            if a is None:
                epoch = self._routing().epoch
                raise errors.Moved("pserver %d is not registered and owns nothing at placement epoch %d"
                                   % (ps, epoch), "MOVED", None, {"owner": "-1", "epoch": str(epoch)})
        return pb_grpc.ParameterServerStub(self._channel(a))

    def _call_ps(self, ps, method, request, what, first=None):
        """Calls pserver `ps` until it answers, retrying transient failures with the same request
        (pushes carry their identity, so a retried push is applied once); re-initialises a pserver
        that lost its state. `first` is the future of a first attempt already sent."""
        deadline, delay = time.monotonic() + self.retry_s, 0.1
        while True:
            try:
                if first is not None:
                    f, first = first, None
                    return f.result()
                return getattr(self._pserver(ps), method)(request, timeout=self.timeout_s)
            except grpc.RpcError as e:
                err = errors.from_rpc_error(e, "%s pserver %d" % (what, ps))
                if err.reason == "NOT_INITIALIZED" and self.values is not None and method != "InitParameters":
                    log.warning("%s: pserver %d lost its state; re-initialising it", err, ps)
                    self._init_one(ps, self._init_id or self.session)
                    continue
                if err.code not in TRANSIENT and err.reason not in ("SYNC_ABORTED", "SHUTTING_DOWN"):
                    raise err
                if time.monotonic() > deadline:
                    raise err
                log.warning("%s; retrying", err)
                time.sleep(delay)
                delay = min(2 * delay, 5.0)

    def _all(self, planned, method, what):
        """Sends (pserver, request) pairs concurrently; returns the answers in order."""
        futures = []
        for ps, req in planned:
            try:
                futures.append(getattr(self._pserver(ps), method).future(req, timeout=self.timeout_s))
            except (grpc.RpcError, errors.Moved):
                futures.append(None)
        return [self._send(ps, method, req, what, first=f) for (ps, req), f in zip(planned, futures)]

    # ---- initialisation ----
    def init_parameters(self, values, timeout_s=None):
        """Makes sure every pserver is initialised. The trainer granted the INIT_PARAMETERS lock sends
        each pserver the `values` ({name: flat float32 array}) of the blocks it owns, FinishInit, and
        releases the lock as done; the others wait until it is done. `values` stays the client's
        latest values (a pserver that loses its state is re-initialised with them)."""
        self._require("init_parameters")
        missing = [p.name for p in self.joined.parameters if not p.sparse and p.name not in values]
        if missing:
            raise ValueError("init_parameters(): no values for %s" % ", ".join(missing))
        self.values, self._init_id = values, None
        req = co.AcquireLockRequest(trainer_id=self.trainer_id, lock=co.INIT_PARAMETERS)
        deadline, logged = time.monotonic() + (timeout_s or self.retry_s), 0
        while True:
            r = self._coord("AcquireLock", req, "taking the init lock")
            if r.outcome == co.AcquireLockResponse.DONE:
                self._init_id = r.done
                for ps, s in self._status():  # lost its state since: initialise it again
                    if not s.initialised:
                        self._init_one(ps, r.done)
                return False
            if r.outcome == co.AcquireLockResponse.GRANTED:
                status = self._status()
                self._init_id = next((s.init_id for _, s in status if s.initialised), uuid.uuid4().hex)
                done = ""
                try:
                    for ps, s in status:
                        if not s.initialised:
                            self._init_one(ps, self._init_id)
                    done = self._init_id
                finally:
                    self._coord("ReleaseLock", co.ReleaseLockRequest(
                        trainer_id=self.trainer_id, lock=co.INIT_PARAMETERS, done=done), "releasing the init lock")
                return True
            if time.monotonic() > deadline:
                raise ParamServerError("init_parameters(): %s still holds the init lock" % r.holder)
            if time.monotonic() - logged > 5:
                log.info("waiting for %s to initialise the pservers", r.holder)
                logged = time.monotonic()
            time.sleep(0.2)

    def _status(self):
        """[(index, ShardStatus)] of the pservers that own something in the map (a new pserver,
        filled by moves, or an emptied one is never initialised)."""
        return [(ps, self._call_ps(ps, "GetShardStatus", pb.GetShardStatusRequest(), "status of"))
                for ps in self._routing().owning()]

    def _init_one(self, ps, init_id):
        j = self.joined
        plan = self._plan()
        groups = plan.get(ps) or [[]]
        for group in groups:
            req = pb.InitParametersRequest(
                trainer_id=self.trainer_id, parameters=j.parameters, init_id=init_id, mode=j.mode,
                staleness=j.staleness, blocks=[self._block(b, self.values) for b in group])
            self._call_ps(ps, "InitParameters", req, "initialising")
        count = sum(len(g) for g in plan.get(ps, []))
        self._call_ps(ps, "FinishInit", pb.FinishInitRequest(
            trainer_id=self.trainer_id, init_id=init_id, expected_blocks=count), "finishing init of")
        log.info("initialised pserver %d with %d blocks (init %s)", ps, count, init_id)

    @staticmethod
    def _block(b, arrays):
        data = np.asarray(arrays[b.name], dtype="<f4").reshape(-1)[b.offset:b.offset + b.length]
        if data.size != b.length:
            raise ValueError("parameter %r has %d values, block %d needs %d from offset %d"
                             % (b.name, np.size(arrays[b.name]), b.block, b.length, b.offset))
        return tensor_pb2.TensorBlock(name=b.name, block=b.block, offset=b.offset,
                                      dtype=tensor_pb2.FLOAT32, data=data.tobytes())

    # ---- training ----
    def push(self, grads, sparse=None, into=None, wait=True):
        """Pushes the gradients as the next step: `grads` {name: flat float32 array} of every dense
        parameter, `sparse` {table: (row ids, [n, width] gradients)}. Returns the step after every
        pserver acknowledged (retrying with the same identity). With `into` ({name: flat array}), the
        new values are written there: in ASYNC from the pushes' answers (return_values), otherwise by
        a pull after the step (SYNC: the push returns once the step was applied by all trainers).
        wait=False returns at once (the arrays were copied) a pending push: complete(pending) waits
        and writes; complete it before the next push (one step in flight keeps exactly-once)."""
        self._require("push", initialised=True)
        self.step += 1
        planned = self._pushes(self.step, grads, sparse, returns=into is not None and self.joined.mode == ASYNC)
        # blocking calls on one sender thread: cheaper than grpc futures (no thread per call), in order
        pending = (self.step, planned, [self._sender.submit(self._send, ps, "PushGradients", req, "pushing to")
                                        for ps, req in planned], into)
        return self.complete(pending) if wait else pending

    def complete(self, pending):
        """Waits for a pending push (push(wait=False)), writes the values into its `into`; its step."""
        step, planned, futures, into = pending
        answers = [f.result() for f in futures]
        if into is not None and self.joined.mode == ASYNC:
            for a in answers:
                self._store(a.blocks, into)
        elif into is not None:
            steps = {}
            for (ps, _), a in zip(planned, answers):
                steps[ps] = max(steps.get(ps, 0), a.step)
            self.pull(into, steps)
        return step

    def push_nothing(self):
        """Takes part in the next step without gradients (an idle trainer in SYNC or
        BOUNDED_STALENESS mode keeps pace, or it would hold the others back)."""
        self._require("push_nothing", initialised=True)
        self.step += 1
        self._all([(ps, self._new_push(self.step)) for ps in self._routing().owning()],
                  "PushGradients", "pushing to")

    def _new_push(self, step, part=0):
        return pb.PushGradientsRequest(trainer_id=self.trainer_id, session=self.session, step=step, part=part)

    def _pushes(self, step, grads, sparse, returns):
        slot_map = self._routing()  # one map for the whole step
        plan = self._plan(sync=self.joined.mode == SYNC)
        rows = self._rows(sparse or {}, slot_map)
        out = []
        for ps, groups in plan.items():
            for part, group in enumerate(groups):
                req = self._new_push(step, part)
                req.gradients.extend(self._block(b, grads) for b in group)
                req.return_values = returns and bool(group)
                if self.joined.mode == SYNC:  # exactly one push per pserver and step
                    req.sparse_gradients.extend(rows.pop(ps, []))
                out.append((ps, req))
            if ps in rows:
                req = self._new_push(step, len(groups))
                req.sparse_gradients.extend(rows.pop(ps))
                out.append((ps, req))
        return out

    def _rows(self, sparse, slot_map):
        """{pserver: [SparseRows]}: each table's rows by owner under `slot_map`, duplicates summed."""
        out = {}
        for table, (ids, g) in sparse.items():
            if table not in self._widths:
                raise ValueError("%r is not a sparse table of the job (%s)" % (table, sorted(self._widths)))
            ids, inverse = np.unique(np.asarray(ids, dtype=np.int64), return_inverse=True)
            summed = np.zeros((len(ids), self._widths[table]), dtype="<f4")
            np.add.at(summed, inverse, np.asarray(g, dtype=np.float32).reshape(len(inverse), -1))
            owners = np.array([slot_map.owner_of_row(table, int(r)) for r in ids], dtype=np.int64)
            for ps in np.unique(owners):
                mask = owners == ps
                out.setdefault(int(ps), []).append(pb.SparseRows(
                    name=table, row_ids=ids[mask].tolist(), dtype=tensor_pb2.FLOAT32,
                    data=summed[mask].tobytes()))
        return out

    def pull(self, into, min_steps=None):
        """Writes the current value of every dense block into `into` ({name: flat float32 array},
        in place). min_steps {pserver: step}: wait until that pserver applied that step."""
        self._require("pull", initialised=True)
        planned = [(ps, pb.PullParametersRequest(
            trainer_id=self.trainer_id, min_step=(min_steps or {}).get(ps, 0),
            blocks=[tensor_pb2.BlockRef(name=b.name, block=b.block) for b in group]))
            for ps, groups in self._plan().items() for group in groups]
        for a in self._all(planned, "PullParameters", "pulling from"):
            self._store(a.blocks, into)

    def pull_rows(self, table, ids):
        """The rows `ids` of sparse table `table`, as a [len(ids), width] float32 array."""
        self._require("pull_rows", initialised=True)
        ids = np.asarray(ids, dtype=np.int64)
        by = self._routing().rows_by_owner(table, ids.tolist())
        planned = [(ps, pb.PullParametersRequest(trainer_id=self.trainer_id, sparse_rows=[
            pb.SparseRowsRef(name=table, row_ids=r)])) for ps, r in by.items()]
        found = {}
        for a in self._all(planned, "PullParameters", "pulling rows from"):
            for rows in a.sparse_rows:
                data = np.frombuffer(rows.data, dtype="<f4").reshape(len(rows.row_ids), -1)
                found.update(zip(rows.row_ids, data))
        return np.stack([found[int(i)] for i in ids]) if len(ids) else np.zeros((0, self._widths[table]), "<f4")

    @staticmethod
    def _store(blocks, into):
        for b in blocks:
            if b.dtype != tensor_pb2.FLOAT32:
                raise ParamServerError("pserver sent block %s#%d as %s, expected FLOAT32"
                                       % (b.name, b.block, tensor_pb2.DataType.Name(b.dtype)))
            src, dst = np.frombuffer(b.data, dtype="<f4"), into[b.name]
            if b.offset + src.size > dst.size:
                raise ParamServerError("pserver sent block %s#%d of %d values at offset %d, beyond the "
                                       "parameter's %d" % (b.name, b.block, src.size, b.offset, dst.size))
            dst[b.offset:b.offset + src.size] = src

    # ---- the master: dataset and tasks ----
    def set_dataset(self, globs, hyperparameters=None):
        """Sets the job's dataset (RecordIO globs, absolute paths the master can read); the first
        call wins, the same dataset again is a no-op, another raises DatasetConflict."""
        self._require("set_dataset", joined=False)
        req = ma.SetDatasetRequest(globs=[globs] if isinstance(globs, str) else list(globs),
                                   trainer_id=self.trainer_id)
        for k, v in (hyperparameters or {}).items():
            if isinstance(v, bool):
                req.hyperparameters[k].bool_value = v
            elif isinstance(v, (int, float)):
                req.hyperparameters[k].number_value = v
            else:
                req.hyperparameters[k].string_value = str(v)
        return self._master(ma_grpc.MasterStub, "SetDataset", req, "setting the dataset")

    def tasks(self):
        """Yields the master's tasks (paramserver.v1.Task), pass after pass, until the job is
        finished; report each with task_finished() (or task_failed()) before taking the next.
        While the master has none to hand out, an idle trainer in SYNC or BOUNDED_STALENESS mode
        keeps pace with empty pushes. Leaving the loop early hands the held tasks back."""
        self._require("tasks", initialised=True)
        hold = WAIT_HOLD_MS if self.joined.mode == ASYNC else 0
        try:
            while True:
                req = ma.GetTaskRequest(trainer_id=self.trainer_id, hold_ms=hold, **{"pass": self.current_pass})
                r = self._master(ma_grpc.MasterStub, "GetTask", req, "getting a task",
                                 timeout_s=self.timeout_s + hold / 1000.0)
                R = ma.GetTaskResponse
                if r.outcome == R.TASK:
                    self.loss_every_records = r.loss_every_records
                    for t in [r.task] + list(r.more_tasks):
                        self._held[t.id] = t
                        yield t
                elif r.outcome in (R.WAIT, R.PASS_NOT_STARTED):
                    if self.joined.mode == SYNC:
                        self.push_nothing()
                        self.pull(self.values)
                    elif self.joined.mode == BOUNDED_STALENESS:
                        self.push_nothing()
                    time.sleep(min(0.05, max(0.005, r.retry_after_ms / 1000.0)) if self.joined.mode != ASYNC
                               else max(0.05, r.retry_after_ms / 1000.0))
                elif r.outcome == R.PASS_FINISHED:
                    self.current_pass = r.current_pass
                elif r.outcome == R.JOB_FINISHED:
                    self.current_pass = r.total_passes
                    return
                elif r.outcome == R.JOB_FAILED:
                    raise ParamServerError("the job failed: %s" % r.reason)
                else:
                    raise ParamServerError("the master answered GetTask with outcome %d" % r.outcome)
        finally:
            self._hand_back()

    def task_finished(self, task, records, loss=()):
        """Reports `task` trained on `records` records (loss: paramserver.v1.LossWindow list);
        False when the master ignored a stale report (the task was re-dispatched)."""
        self._require("task_finished")
        self._held.pop(task.id, None)
        return self._master(ma_grpc.MasterStub, "TaskFinished", ma.TaskFinishedRequest(
            trainer_id=self.trainer_id, task_id=task.id, epoch=task.epoch, records=records,
            loss=list(loss)), "reporting task %d finished" % task.id).accepted

    def task_failed(self, task, reason, handed_back=False):
        """Reports a task that could not be trained (handed_back: returned unfinished, no failure)."""
        self._require("task_failed")
        self._held.pop(task.id, None)
        return self._master(ma_grpc.MasterStub, "TaskFailed", ma.TaskFailedRequest(
            trainer_id=self.trainer_id, task_id=task.id, epoch=task.epoch, reason=reason,
            handed_back=handed_back), "reporting task %d failed" % task.id).accepted

    def _hand_back(self):
        for t in list(self._held.values()):
            try:
                self.task_failed(t, "the trainer stopped", handed_back=True)
            except ParamServerError as e:
                log.warning("could not hand task %d back (the master re-dispatches it later): %s", t.id, e)

    def report_evaluation(self, pass_, loss, accuracy, samples, auc=0.0):
        self._require("report_evaluation", joined=False)
        self._master(ma_grpc.MasterStub, "ReportEvaluation", ma.ReportEvaluationRequest(
            trainer_id=self.trainer_id, loss=loss, accuracy=accuracy, samples=samples, auc=auc,
            **{"pass": pass_}), "reporting the evaluation")

    def status(self):
        """The job's status (paramserver.v1.JobStatus)."""
        return self._master(ma_grpc.MasterStub, "GetStatus", ma.GetStatusRequest(), "getting the status")

    def acquire_lock(self, lock, pass_=0):
        """AcquireLockResponse for co.INIT_PARAMETERS, co.EXPORT_MODEL or co.EVALUATE_PASS."""
        self._require("acquire_lock")
        return self._coord("AcquireLock", co.AcquireLockRequest(
            trainer_id=self.trainer_id, lock=lock, **{"pass": pass_}), "taking a lock")

    def release_lock(self, lock, pass_=0, done=""):
        self._require("release_lock")
        self._coord("ReleaseLock", co.ReleaseLockRequest(
            trainer_id=self.trainer_id, lock=lock, done=done, **{"pass": pass_}), "releasing a lock")

    def close(self):
        """Hands back held tasks, ends the membership (half-closes Attend) and closes the channels."""
        if self._closed.is_set():
            return
        if self.joined is not None:
            self._hand_back()
        self._closed.set()
        if self._stop is not None:
            self._stop.set()  # the heartbeats end: Attend is half-closed, the membership ends
        if self._attend is not None:
            self._attend.join(timeout=5)
            if self._attend.is_alive() and getattr(self, "_call", None) is not None:
                self._call.cancel()
        self._sender.shutdown(cancel_futures=True)
        for ch in self._channels.values():
            ch.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _number(text, absent):
    try:
        return int(text)
    except (TypeError, ValueError):
        return absent
