// The paramserver console: polls /admin/job once a second with the admin token kept in this tab's
// sessionStorage, and draws the job, its curves (uPlot, served from the master's jar), the
// pservers, the scaling (placement epoch and slot moves), the serving replicas, the trainers and
// the events. No page reloads, nothing fetched from elsewhere.
//
// The view follows the JSON Schema at /admin/job/schema (admin-api's job-view.schema.json): a
// type in {braces} below is that schema's root (JobView) or one of its $defs, and every variable
// holding a part of the view is typed, by a JSDoc @param or by being assigned from a typed one
// (const j = v.job), so that ConsoleScriptFieldsTest can check each field read against the schema.
(function () {
  'use strict';
  const TOKEN_KEY = 'paramserver.adminToken';
  const $ = (id) => document.getElementById(id);
  const charts = {};
  let timer = null;

  // a token passed once in the URL (#token=...) goes to the session and out of the address bar
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.get('token')) {
    sessionStorage.setItem(TOKEN_KEY, fragment.get('token'));
    history.replaceState(null, '', location.pathname + location.search);
  }

  function token() { return sessionStorage.getItem(TOKEN_KEY); }

  function show(view) {
    for (const id of ['login', 'standby', 'console']) { $(id).hidden = id !== view; }
    $('logout-button').hidden = view === 'login';
  }

  function login(message) {
    stop();
    $('login-error').textContent = message || '';
    show('login');
    $('login-token').focus();
  }

  $('login-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const t = $('login-token').value.trim();
    if (!t) { $('login-error').textContent = 'enter the admin token'; return; }
    sessionStorage.setItem(TOKEN_KEY, t);
    $('login-token').value = '';
    start();
  });
  $('logout-button').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    login('logged out');
  });

  async function call(method, path) {
    return fetch(path, { method, headers: { Authorization: 'Bearer ' + token(), Accept: 'application/json' } });
  }

  async function refresh() {
    let r;
    try {
      r = await call('GET', 'admin/job');
    } catch (e) {
      $('updated').textContent = 'master unreachable at ' + new Date().toLocaleTimeString();
      return;
    }
    if (r.status === 401) {
      sessionStorage.removeItem(TOKEN_KEY);
      const body = await r.json().catch(() => ({}));
      login(body.message || 'the token was refused');
      return;
    }
    const body = await r.json();
    if (r.status === 409) {
      standby(body);
      return;
    }
    show('console');
    const errors = render(body);
    $('updated').textContent = 'last at ' + new Date().toLocaleTimeString()
      + (errors.length ? '; could not draw ' + errors.join('; ') : '');
  }

  function standby(body) {
    show('standby');
    $('standby-message').textContent = body.message || 'this master is not the leader';
    const link = $('standby-link');
    if (body.leaderAdminAddress) {
      link.href = 'http://' + body.leaderAdminAddress + '/';
      link.hidden = false;
    } else {
      link.hidden = true;
    }
  }

  function fmt(v, digits) {
    if (v === null || v === undefined || Number.isNaN(v)) return '–';
    if (typeof v !== 'number') return String(v);
    return digits === undefined ? v.toLocaleString() : v.toFixed(digits);
  }

  function duration(s) {
    if (s === null || s === undefined) return '–';
    s = Math.round(s);
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    return (h ? h + 'h ' : '') + (h || m ? m + 'm ' : '') + sec + 's';
  }

  function bytes(n) {
    if (!n) return '0 B';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    const i = Math.min(u.length - 1, Math.floor(Math.log(n) / Math.log(1024)));
    return (n / Math.pow(1024, i)).toFixed(i ? 1 : 0) + ' ' + u[i];
  }

  /** @param {JobView} v */
  function render(v) {
    const j = v.job || {};
    $('master').textContent = 'leader ' + (j.masterId || '') + (j.adminAddress ? ' (http ' + j.adminAddress + ')' : '');
    $('job-state').textContent = j.state || '–';
    const shown = j.state === 'FINISHED' ? j.totalPasses : Math.min((j.pass || 0) + 1, j.totalPasses || 0);
    $('job-pass').textContent = shown + ' of ' + fmt(j.totalPasses);
    const t = j.tasks || {};
    $('job-tasks').textContent = (t.todo || 0) + ' todo · ' + (t.pending || 0) + ' pending · '
      + (t.done || 0) + ' done · ' + (t.failed || 0) + ' failed';
    $('job-elapsed').textContent = duration(j.elapsedSeconds);
    $('job-eta').textContent = j.state === 'RUNNING' ? duration(j.etaSeconds) : '–';
    $('job-rate').textContent = fmt(j.recordsPerSecond, 0);
    $('job-samples').textContent = fmt(j.samplesPerSecond, 0);
    const pct = Math.round((j.progress || 0) * 1000) / 10;
    $('job-progress-bar').style.width = pct + '%';
    $('job-progress').textContent = pct + '% of ' + fmt(j.datasetRecords) + ' records × ' + fmt(j.totalPasses) + ' passes';
    $('job-failure').textContent = j.failureReason ? 'failure: ' + j.failureReason : '';
    // one part failing to draw must not keep the others stale
    const errors = [];
    for (const [name, draw] of [
      ['charts', () => renderCharts(v)],
      ['pservers', () => renderPservers(v.pservers || [])],
      ['scaling', () => renderScaling(v.scaling)],
      ['serving', () => renderServing(v.serving)],
      ['trainers', () => renderTrainers(v.trainers || [])],
      ['events', () => renderEvents(v.events || [])]]) {
      try { draw(); } catch (e) { errors.push(name + ': ' + e); }
    }
    return errors;
  }

  function chart(id, title, series, data, timeAxis) {
    const el = $(id);
    const width = Math.max(300, el.clientWidth || 420);
    if (!charts[id]) {
      charts[id] = new uPlot({
        width, height: 220,
        scales: { x: { time: timeAxis } },
        // passes are whole numbers
        axes: [timeAxis ? {} : { label: 'pass', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500] }, {}],
        series: [{ label: timeAxis ? 'time' : 'pass' }].concat(series),
      }, data, el);
    } else {
      charts[id].setData(data);
    }
  }

  const COLORS = ['#2f7de1', '#e8590c', '#2b8a3e', '#862e9c'];

  /** @param {JobView} v */
  function renderCharts(v) {
    const s = v.series || { time: [] };
    chart('chart-loss', 'loss', [{ label: 'training loss', stroke: COLORS[0], spanGaps: true }],
      [s.time || [], s.trainLoss || []], true);
    chart('chart-rate', 'records/s', [
      { label: 'records/s', stroke: COLORS[1] },
      { label: 'samples/s', stroke: COLORS[2] }],
      [s.time || [], s.recordsPerSecond || [], s.samplesPerSecond || []], true);
    const p = v.passes || [];
    const x = p.map((q) => q.pass + 1);
    chart('chart-pass-loss', 'loss', [
      { label: 'training loss', stroke: COLORS[0], spanGaps: true, points: { show: true } },
      { label: 'test loss', stroke: COLORS[1], spanGaps: true, points: { show: true } }],
      [x, p.map((q) => q.trainLoss), p.map((q) => q.testLoss)], false);
    chart('chart-pass-acc', 'accuracy', [
      { label: 'accuracy', stroke: COLORS[2], spanGaps: true, points: { show: true } },
      { label: 'AUC', stroke: COLORS[3], spanGaps: true, points: { show: true } }],
      [x, p.map((q) => q.accuracy), p.map((q) => q.auc)], false);
  }

  function cell(tr, text, cls) {
    const td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function flags(td, names) {
    for (const n of names) {
      const span = document.createElement('span');
      span.className = 'flag flag-' + n;
      span.textContent = n;
      td.appendChild(span);
    }
  }

  /** @param {Pserver[]} list */
  function renderPservers(list) {
    const body = document.querySelector('#pservers tbody');
    body.replaceChildren();
    for (const p of list) {
      const tr = document.createElement('tr');
      tr.dataset.index = p.index;
      const f = [];
      if (p.state === 'LOST') f.push('lost'); else if (p.down) f.push('down');
      if (p.hot) f.push('hot');
      tr.className = f.includes('lost') || f.includes('down') ? 'down' : (p.hot ? 'hot' : '');
      cell(tr, p.index);
      cell(tr, p.address);
      cell(tr, p.state, 'state').title = p.error || '';
      cell(tr, fmt(p.step));
      cell(tr, bytes(p.parameterBytes));
      const rows = Object.entries(p.sparseRows || {}).map(([k, n]) => k + ': ' + n.toLocaleString());
      cell(tr, rows.length ? rows.join(', ') : '–');
      cell(tr, fmt(p.pushesPerSecond, 1));
      cell(tr, fmt(p.pullsPerSecond, 1));
      cell(tr, p.applyP99Ms === null || p.applyP99Ms === undefined ? '–' : p.applyP99Ms.toFixed(2) + ' ms');
      const age = cell(tr, p.checkpointAgeSeconds === null || p.checkpointAgeSeconds === undefined
        ? 'none' : duration(p.checkpointAgeSeconds), 'checkpoint-age');
      age.dataset.seconds = p.checkpointAgeSeconds === null ? '' : p.checkpointAgeSeconds;
      cell(tr, p.replica || '–');
      flags(cell(tr, '', 'flags'), f);
      body.appendChild(tr);
    }
  }

  /** @param {Move} m */
  function moveText(m) {
    return 'pserver ' + m.from + ' → ' + m.to;
  }

  // The placement: hidden when the master does not send it; one line while the job was never
  // scaled; else the epoch, the pserver counts, the phase, the move under way and the last moves.
  /** @param {Scaling} s */
  function renderScaling(s) {
    $('scaling').hidden = !s;
    if (!s) return;
    const m = s.move;
    const moves = s.moves || [];
    // a scaling just asked for writes the first map at epoch 0: shown once the counts differ
    const never = s.epoch === 0 && !m && moves.length === 0 && s.phase === 'idle' && !s.lastError
      && (s.pservers === null || s.pservers === s.desired);
    $('scaling-never').hidden = !never;
    $('scaling-details').hidden = never;
    if (never) {
      $('scaling-never').textContent = 'placement epoch 0, never scaled'
        + (s.desired ? ' (' + s.desired + ' pserver' + (s.desired === 1 ? '' : 's') + ')' : '');
      return;
    }
    $('scaling-epoch').textContent = fmt(s.epoch);
    $('scaling-pservers').textContent = fmt(s.pservers === null ? s.desired : s.pservers) + ' / ' + fmt(s.desired);
    $('scaling-phase').textContent = s.phase;
    $('scaling-move').textContent = m
      ? m.id + ': ' + moveText(m) + ' · ' + m.slots + ' slots · ' + m.blocks + ' blocks'
      : '–';
    $('scaling-error').textContent = s.lastError ? 'last error: ' + s.lastError : '';
    const body = document.querySelector('#moves tbody');
    body.replaceChildren();
    for (const q of moves.slice().reverse()) {
      const tr = document.createElement('tr');
      tr.dataset.id = q.id;
      const committed = q.result === 'committed';
      tr.className = committed ? '' : 'down';
      cell(tr, q.id);
      cell(tr, moveText(q));
      cell(tr, fmt(q.slots));
      cell(tr, fmt(q.blocks));
      cell(tr, q.bytes === null ? '–' : bytes(q.bytes));
      cell(tr, fmt(q.copyMs));
      cell(tr, fmt(q.stallMs));
      cell(tr, q.result || '–', committed ? '' : 'error').title = q.durationMs === null ? '' : q.durationMs + ' ms in all';
      body.appendChild(tr);
    }
  }

  // The serving replicas: hidden when the master sends none (none registered, or an older master).
  /** @param {Serving[]} list */
  function renderServing(list) {
    $('serving').hidden = !list || list.length === 0;
    const body = document.querySelector('#serving-replicas tbody');
    body.replaceChildren();
    for (const r of list || []) {
      const tr = document.createElement('tr');
      tr.dataset.id = r.id;
      tr.className = r.state === 'SERVING' ? '' : 'down';
      cell(tr, r.address, 'address').title = 'replica ' + r.id
        + (r.adminAddress ? ' · http ' + r.adminAddress : '');
      cell(tr, r.state, 'state');
      cell(tr, r.source);
      cell(tr, r.version ? fmt(r.version) : '–', 'version');
      cell(tr, r.sequences.length ? r.sequences.map((q, i) => i + ': ' + q).join(', ') : '–');
      const behind = cell(tr, r.behind === null ? '–' : fmt(r.behind) + ' updates', 'behind');
      behind.dataset.updates = r.behind === null ? '' : r.behind;
      cell(tr, fmt(r.lagMs) + ' ms', 'lag');
      cell(tr, fmt(r.connected));
      body.appendChild(tr);
    }
  }

  /** @param {Trainer[]} list */
  function renderTrainers(list) {
    const body = document.querySelector('#trainers tbody');
    body.replaceChildren();
    for (const t of list) {
      const tr = document.createElement('tr');
      tr.dataset.id = t.id;
      const f = [];
      if (t.error) f.push('down');
      if (t.straggler) f.push('straggler');
      tr.className = t.error ? 'down' : (t.straggler ? 'straggler' : '');
      cell(tr, t.id);
      cell(tr, t.state).title = t.error || '';
      cell(tr, t.pass < 0 ? '–' : t.pass + 1);
      cell(tr, fmt(t.task));
      cell(tr, fmt(t.tasksDone));
      cell(tr, fmt(t.samplesPerSecond, 0));
      cell(tr, t.loss === null || t.loss === undefined ? '–' : t.loss.toFixed(4));
      cell(tr, t.lastReport ? new Date(t.lastReport).toLocaleTimeString() : 'never');
      cell(tr, (t.lagSeconds === null ? '–' : t.lagSeconds.toFixed(1) + ' s')
        + (t.passLag ? ' · ' + t.passLag + ' pass(es) behind' : ''));
      flags(cell(tr, '', 'flags'), f);
      body.appendChild(tr);
    }
  }

  /** @param {Event[]} list */
  function renderEvents(list) {
    const ol = $('events');
    ol.replaceChildren();
    for (const e of list.slice().reverse()) {
      const li = document.createElement('li');
      li.dataset.kind = e.kind;
      const time = document.createElement('time');
      time.dateTime = new Date(e.time).toISOString();
      time.textContent = new Date(e.time).toLocaleTimeString();
      li.appendChild(time);
      li.appendChild(document.createTextNode(e.message));
      ol.appendChild(li);
    }
  }

  async function action(path, label) {
    $('action-result').textContent = label + '…';
    try {
      const r = await call('POST', path);
      const body = await r.json().catch(() => ({}));
      if (!r.ok) {
        $('action-result').textContent = label + ' failed: ' + (body.message || body.error || r.status);
        return;
      }
      const cps = body.checkpoints || [];
      const ok = cps.filter((c) => c.ok).length;
      $('action-result').textContent = label + ': ' + ok + ' of ' + cps.length + ' pservers checkpointed'
        + (body.message ? '; ' + body.message : '');
      refresh();
    } catch (e) {
      $('action-result').textContent = label + ' failed: ' + e;
    }
  }

  $('checkpoint-button').addEventListener('click', () => action('admin/job/checkpoint', 'checkpoint'));
  $('stop-button').addEventListener('click', () => {
    if (confirm('Stop the job? Every pserver checkpoints, then the job ends and the trainers stop.')) {
      action('admin/job/stop', 'stop');
    }
  });

  function start() {
    stop();
    refresh();
    timer = setInterval(refresh, 1000);
  }

  function stop() {
    if (timer) { clearInterval(timer); timer = null; }
  }

  // for the browser tests and the curious: the charts and their data
  window.paramserverConsole = { charts };

  if (token()) { start(); } else { login(''); }
})();
