/* timeline.js: a window of one communicator's events (timeline.html?job=J&
 * comm=C&t0_ns=..&t1_ns=.., and rank, type, limit, expand=1): a row per rank,
 * which a click on its name opens into a row per lane (event type, and
 * channel), overlapping events of a row on rows beneath it; a time axis in
 * human units from the window's start, with its UTC time where the answer
 * carries wall_offset_ns ("wall clock unknown" where not); a colour per event
 * type with its legend; an arrow from each Send to the Recv that received it.
 * Wheel zooms at the pointer, dragging pans, a click shows the event's
 * values.
 *
 * The window is typed in human units (from: a UTC time or the collector's
 * clock, "137.25 s"; for: "20 ms"); the address keeps it as t0_ns/t1_ns, so
 * other pages link to a place exactly. It is read a page (limit, default
 * 20000 events) at a time through the timeline query's cursor, so a large
 * window costs what was asked for; Next page adds the following one. Without
 * a window: that of the communicator's last collectives. The Chrome JSON
 * download fetches every page of the window and converts it here
 * (trace.js); the Perfetto one is the collector's /api/v1/export, the
 * writer of `ncclscope export`.
 *
 * Sends meet Recvs as /api/v1/p2p matches them (engine/query/p2p.c): per
 * direction, the n-th Send of rank a to peer b and the n-th Recv of rank b
 * from peer a, in order of start, counted from the window's start.
 */
'use strict';

(() => {
    const {el, param, fmtNs, fmtWall, parseDuration} = NSC;
    const ROW_H = 16, LABEL_W = 200, AXIS_H = 36, MAX_EVENTS = 1000000;
    /* Summary types: what a closed rank's row shows. */
    const SUMMARY = ['Coll', 'P2p'];
    /* One colour per event type (by its index in the header's types), far
     * enough apart to tell at a glance. */
    const PALETTE = ['#7f7f7f', '#1f77b4', '#2ca02c', '#ff7f0e', '#d62728', '#8c564b', '#9467bd', '#e377c2',
                     '#bcbd22', '#17becf', '#aec7e8', '#ffbb78', '#98df8a', '#ff9896', '#c5b0d5', '#c49c94'];
    const FILTERS = ['rank', 'type', 'limit'];  /* the form's, also taken from the address */
    const form = document.getElementById('window');
    const canvas = document.getElementById('lanes');
    const axis = document.getElementById('axis');
    let job = param('job');
    const comm = param('comm');
    let header = null, cursor = null, events = [], rows = [], pairs = [], count = 0;
    let win = {t0: null, t1: null}, fallback = {t0: null, t1: null}, wall = null;
    let full = {t0: 0, t1: 1}, view = {t0: 0, t1: 1};
    const expanded = new Set();

    function windowParams(extra) {
        const f = new FormData(form);
        const p = {job, comm, format: 'compact', states: 0, t0_ns: win.t0, t1_ns: win.t1};
        for (const k of FILTERS)
            p[k] = f.get(k).trim();
        return Object.assign(p, extra);
    }

    /* ns exactly, in the largest unit it reaches: "137.257518403 s". */
    function fmtExact(ns) {
        const [unit, scale] = ns >= 1e9 ? ['s', 1e9] : ns >= 1e6 ? ['ms', 1e6] : ns >= 1e3 ? ['us', 1e3] : ['ns', 1];
        return String(ns / scale) + ' ' + unit;
    }

    /* The form's window: {t0, t1} in aligned ns (null: unbounded), or a
     * message saying what to type. */
    function formWindow() {
        const from = form.elements.from.value.trim(), span = form.elements.span.value.trim();
        let t0 = null;
        if (/^\d{4}-\d\d-\d\dT/.test(from)) {
            const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d{1,9})?Z$/.exec(from);
            if (!m)
                return 'from: a UTC time reads 2026-05-04T10:20:30.123456Z';
            if (wall === null)
                return 'from: the wall clock is unknown here; give the start on the collector\'s clock (137.25 s)';
            t0 = Number(BigInt(Date.parse(m[1] + 'Z')) * 1000000n + BigInt(Math.round(Number('0' + (m[2] || '')) * 1e9)) - wall);
        } else if (from) {
            t0 = parseDuration(from);
            if (Number.isNaN(t0))
                return 'from: a UTC time (2026-05-04T10:20:30.5Z) or the collector\'s clock in human units (137.25 s)';
        }
        const len = span ? parseDuration(span) : null;
        if (Number.isNaN(len) || len === 0)
            return 'for: a length in human units (500 us, 20 ms, 2 s, 5 m)';
        if (t0 === null && len !== null) {
            const end = fallback.t1 !== null ? fallback.t1 : full.t1;
            return {t0: Math.max(0, end - len), t1: end};
        }
        if (t0 === null)
            return {t0: fallback.t0, t1: fallback.t1};
        return {t0: Math.max(0, t0), t1: len === null ? null : Math.max(0, t0) + len};
    }

    /* The window's start in UTC: the API's string when the window was asked
     * with it (the header's t0_utc), else from the answer's wall clock; null
     * when that is unknown. */
    function windowUtc() {
        return header && header.t0_utc && win.t0 === full.t0 ? header.t0_utc : fmtWall(full.t0, wall);
    }

    /* The window as the form shows it: in human units, UTC where known. */
    function fillForm() {
        form.elements.from.value = windowUtc() || fmtExact(full.t0);
        form.elements.span.value = fmtExact(full.t1 - full.t0);
    }

    const typeIndex = name => header.types.indexOf(name);
    const colourOf = type => PALETTE[Math.max(0, typeIndex(type)) % PALETTE.length];
    const hostOf = rank => ((header.ranks || []).find(r => r.rank === rank) || {}).host;

    /* Events on rows. A closed rank is one row of its summary events (those
     * of its first type if it has none), overlapping ones drawn over each
     * other; an open one a label row and a lane per type and channel, where
     * an event goes on the first row of its lane that is free at its
     * start. */
    function layout() {
        rows = [];
        const byRank = new Map();
        for (const e of events) {
            if (!byRank.has(e.rank))
                byRank.set(e.rank, []);
            byRank.get(e.rank).push(e);
            e.row = null;
        }
        /* stack: overlapping events on rows beneath (a lane); else one row */
        const place = (rank, lane, evs, head, stack) => {
            const lanes = [];
            for (const e of evs) {
                let row = stack ? lanes.find(r => r.freeAt <= e.start) : lanes[0];
                if (!row) {
                    row = {rank, lane, head: head && !lanes.length, sub: lanes.length, freeAt: 0, events: [], index: rows.length};
                    lanes.push(row);
                    rows.push(row);
                }
                row.freeAt = e.end === null ? Infinity : e.end + 1;
                row.events.push(e);
                e.row = row;
            }
        };
        const ch = lane => Number(lane.split(' ch')[1] || -1);
        for (const rank of [...byRank.keys()].sort((a, b) => a - b)) {
            const evs = byRank.get(rank);
            if (!expanded.has(rank)) {
                let shown = evs.filter(e => SUMMARY.includes(e.type));
                if (!shown.length) {
                    const first = Math.min(...evs.map(e => typeIndex(e.type)));
                    shown = evs.filter(e => typeIndex(e.type) === first);
                }
                place(rank, '', shown, true, false);
                continue;
            }
            rows.push({rank, lane: '', head: true, sub: 0, events: [], index: rows.length});
            const lanes = new Map();
            for (const e of evs) {
                if (!lanes.has(e.lane))
                    lanes.set(e.lane, []);
                lanes.get(e.lane).push(e);
            }
            const order = [...lanes.keys()].sort((a, b) => typeIndex(lanes.get(a)[0].type) - typeIndex(lanes.get(b)[0].type) ||
                                                             ch(a) - ch(b) || a.localeCompare(b));
            for (const lane of order)
                place(rank, lane, lanes.get(lane), false, true);
        }
    }

    /* Each Send with the Recv that received it (see the file's comment). */
    function matchSends() {
        const dirs = new Map();
        for (const e of events) {
            const func = String(e.fields.func || '').toLowerCase();
            if (e.type !== 'P2p' || (func !== 'send' && func !== 'recv'))
                continue;
            const key = func === 'recv' ? e.fields.peer + '>' + e.rank : e.rank + '>' + e.fields.peer;
            if (!dirs.has(key))
                dirs.set(key, {send: [], recv: []});
            dirs.get(key)[func].push(e);  /* events come in order of start, then id */
        }
        pairs = [];
        for (const d of dirs.values())
            for (let k = 0; k < Math.min(d.send.length, d.recv.length); k++)
                pairs.push([d.send[k], d.recv[k]]);
    }

    const x = t => LABEL_W + (t - view.t0) / (view.t1 - view.t0) * (canvas.width - LABEL_W);
    const t = px => view.t0 + (px - LABEL_W) / (canvas.width - LABEL_W) * (view.t1 - view.t0);

    /* Tick spacing: 1, 2 or 5 times a power of ten ns, about every 110 px. */
    function tickStep() {
        const raw = (view.t1 - view.t0) / Math.max(1, (canvas.width - LABEL_W) / 110);
        const p = Math.pow(10, Math.floor(Math.log10(raw)));
        return [1, 2, 5, 10].map(m => m * p).find(s => s >= raw);
    }
    /* A tick's offset in the unit of ten steps: +0.5 ms, +1 ms, +1.5 ms. */
    function fmtTick(off, step) {
        const ten = step * 10;
        const [unit, scale] = ten >= 1e9 ? ['s', 1e9] : ten >= 1e6 ? ['ms', 1e6] : ten >= 1e3 ? ['us', 1e3] : ['ns', 1];
        const digits = Math.max(0, Math.ceil(-Math.log10(step / scale) - 1e-9));
        return (off < 0 ? '-' : '+') + Number((Math.abs(off) / scale).toFixed(digits)) + ' ' + unit;
    }

    /* The axis: offsets from the window's start, and the view's start as UTC. */
    function drawAxis() {
        axis.width = canvas.width;
        axis.height = AXIS_H;
        const g = axis.getContext('2d');
        g.font = '11px sans-serif';
        g.textBaseline = 'middle';
        g.fillStyle = '#222';
        const at = fmtWall(view.t0, wall);
        g.fillText(at ? at.slice(11) + ' UTC' : 'wall clock unknown', 4, 10, LABEL_W - 8);
        g.fillStyle = '#6b7280';
        g.fillText(at ? at.slice(0, 10) : 'collector clock ' + fmtExact(Math.round(view.t0)), 4, 26, LABEL_W - 8);
        const step = tickStep(), labels = [];
        g.strokeStyle = '#9ca3af';
        for (let v = Math.ceil((view.t0 - full.t0) / step) * step; full.t0 + v <= view.t1; v += step) {
            const px = Math.round(x(full.t0 + v)) + 0.5;
            g.beginPath();
            g.moveTo(px, AXIS_H - 10);
            g.lineTo(px, AXIS_H);
            g.stroke();
            labels.push(fmtTick(v, step));
            g.fillStyle = '#222';
            g.fillText(labels[labels.length - 1], px + 3, 12);
        }
        axis.setAttribute('data-ticks', labels.join('|'));
        axis.setAttribute('data-wall', windowUtc() || 'unknown');
    }

    function arrow(g, x0, y0, x1, y1) {
        g.beginPath();
        g.moveTo(x0, y0);
        g.lineTo(x1, y1);
        g.stroke();
        const a = Math.atan2(y1 - y0, x1 - x0);
        g.beginPath();
        g.moveTo(x1, y1);
        g.lineTo(x1 - 7 * Math.cos(a - 0.4), y1 - 7 * Math.sin(a - 0.4));
        g.lineTo(x1 - 7 * Math.cos(a + 0.4), y1 - 7 * Math.sin(a + 0.4));
        g.closePath();
        g.fill();
    }

    function label(row) {
        if (!row.head)
            return row.sub ? '' : '      ' + row.lane;
        const host = hostOf(row.rank);
        return (expanded.has(row.rank) ? '\u25be ' : '\u25b8 ') + 'rank ' + row.rank + (host ? ' ' + host : '');
    }

    function draw() {
        canvas.width = Math.max(400, document.getElementById('timeline').clientWidth);
        canvas.height = Math.max(ROW_H, rows.length * ROW_H);
        drawAxis();
        const g = canvas.getContext('2d');
        g.font = '11px sans-serif';
        g.textBaseline = 'middle';
        rows.forEach((row, i) => {
            const y = i * ROW_H;
            if (row.sub === 0) {
                g.fillStyle = row.head && i ? '#888' : '#e3e3e3';
                g.fillRect(0, y, canvas.width, 1);
                g.fillStyle = '#222';
                g.fillText(label(row), 4, y + ROW_H / 2, LABEL_W - 8);
            }
            for (const e of row.events) {
                const end = e.end === null ? view.t1 : e.end;
                if (end < view.t0 || e.start > view.t1)
                    continue;
                const x0 = Math.max(LABEL_W, x(e.start)), x1 = Math.min(canvas.width, x(end));
                g.fillStyle = colourOf(e.type);
                g.globalAlpha = e.end === null ? 0.45 : 1;  /* still open: paler */
                g.fillRect(x0, y + 2, Math.max(1, x1 - x0), ROW_H - 4);
                g.globalAlpha = 1;
                if (x1 - x0 > 3) {  /* an edge, so events drawn over each other stay apart */
                    g.fillStyle = '#fff';
                    g.fillRect(x0, y + 2, 1, ROW_H - 4);
                }
                if (x1 - x0 > 40) {
                    g.fillStyle = '#111';
                    g.fillText(e.name, x0 + 2, y + ROW_H / 2, x1 - x0 - 4);
                }
            }
        });
        g.strokeStyle = g.fillStyle = 'rgba(17, 17, 17, 0.8)';
        g.lineWidth = 1.2;
        for (const [s, r] of pairs) {
            const to = r.end === null ? r.start : r.end;
            if (Math.max(s.start, to) >= view.t0 && Math.min(s.start, to) <= view.t1)
                arrow(g, x(s.start), s.row.index * ROW_H + ROW_H / 2, x(to), r.row.index * ROW_H + ROW_H / 2);
        }
        const box = document.getElementById('timeline');
        box.setAttribute('data-events', count);
        box.setAttribute('data-rows', rows.length);
        box.setAttribute('data-lanes', new Set(events.map(e => e.rank + '|' + e.lane)).size);
        box.setAttribute('data-ranks', new Set(rows.map(r => r.rank)).size);
        box.setAttribute('data-open', [...expanded].sort((a, b) => a - b).join(','));
        box.setAttribute('data-arrows', pairs.length);
        box.setAttribute('data-more', cursor ? '1' : '0');
        box.setAttribute('data-view', Math.round(view.t0) + '-' + Math.round(view.t1));
        box.setAttribute('data-window', full.t0 + '-' + full.t1);
        document.getElementById('loaded').textContent = count + ' events of ' + new Set(rows.map(r => r.rank)).size +
            ' ranks' + (cursor ? '; more remain in the window (Next page)' : '; the whole window') + '; window from ' +
            (windowUtc() || fmtExact(full.t0) + ' on the collector\'s clock (wall clock unknown)') + ' for ' +
            fmtNs(full.t1 - full.t0) + '; shown ' + fmtNs(view.t1 - view.t0) + ' from +' + fmtNs(view.t0 - full.t0);
    }

    /* The types of the window, each with its colour. */
    function drawLegend() {
        const present = header.types.filter(ty => events.some(e => e.type === ty));
        document.getElementById('legend').replaceChildren(...present.map(ty =>
            el('span', {class: 'type', 'data-type': ty, 'data-colour': colourOf(ty)},
               el('span', {class: 'swatch', style: 'background:' + colourOf(ty)}), ty)),
            pairs.length ? el('span', {class: 'type'}, ' \u2192 a Send to its Recv') : '');
    }

    function details(e) {
        const at = fmtWall(e.start, wall);
        document.getElementById('details').replaceChildren(
            el('h3', {}, e.name + ' (' + e.type + '), rank ' + e.rank + ', ' + (e.end === null ? 'open' : fmtNs(e.end - e.start))),
            el('p', {class: 'note'}, 'starts ' + (at ? at + ', ' : '') + '+' + fmtNs(e.start - full.t0) + ' into the window'),
            el('table', {class: 'grid kv'}, el('tbody', {}, Object.entries(e.fields).map(([k, v]) =>
                el('tr', {}, el('th', {}, k), el('td', {class: 'mono'}, v === null ? 'null' : Array.isArray(v) ? v.join(', ') : v))))));
    }

    function hit(px, py) {
        const row = rows[Math.floor(py / ROW_H)];
        if (!row || px < LABEL_W)
            return null;
        const slack = 2 * (view.t1 - view.t0) / (canvas.width - LABEL_W);
        const at = t(px);
        return row.events.find(e => e.start - slack <= at && (e.end === null ? Infinity : e.end) + slack >= at) || null;
    }

    function relayout() {
        layout();
        draw();
    }

    /* What the collector's fetch before the first page did not bring
     * (detail = on-demand, docs/api-events.md "Detail on demand"), agent by agent. */
    function showDetail(d) {
        const missing = d && !d.complete ? d.missing : [];
        const at = ns => fmtWall(ns, wall) || ns + ' ns';
        document.getElementById('detail').replaceChildren(...missing.map(m => el('div', {},
            'Detail of agent ' + m.agent + ' (host ' + m.host + ') missing: ' + m.reason +
            (m.held_from_ns !== undefined ? '; its ring holds ' + at(m.held_from_ns) + ' to ' + at(m.held_to_ns) : ''))));
    }

    async function page() {
        const first = !cursor;
        const res = await NSC.ndjson('timeline', windowParams(cursor ? {cursor} : {}));
        if (!res.end)
            throw new NSC.ApiError('the timeline stream was cut off; load again');
        header = res.header;
        wall = header.wallOffset;
        if (first)
            showDetail(header.detail);
        for (const r of res.items)
            events.push(NSCTrace.event(header, r));
        count += res.items.length;
        cursor = res.end.next_cursor;
        document.getElementById('more').disabled = !cursor || count >= MAX_EVENTS;
        matchSends();
        layout();
        drawLegend();
    }

    async function load() {
        events = [];
        count = 0;
        cursor = null;
        await page();
        /* no spread into Math.min: a page may hold a million events */
        let lo = Infinity, hi = -Infinity;
        for (const e of events) {
            lo = Math.min(lo, e.start);
            hi = Math.max(hi, e.end === null ? e.start : e.end);
        }
        full = {t0: win.t0 !== null ? win.t0 : lo, t1: win.t1 !== null ? win.t1 : hi};
        if (!(full.t1 > full.t0))
            full = {t0: 0, t1: 1};
        view = Object.assign({}, full);
        const f = new FormData(form);
        const p = {job, comm, t0_ns: win.t0, t1_ns: win.t1, expand: param('expand')};
        for (const k of FILTERS)
            p[k] = f.get(k).trim();
        history.replaceState(null, '', NSC.link('timeline.html', p));
        fillForm();
        draw();
    }

    /* Without a window: the span of the communicator's last collectives. */
    async function defaultWindow() {
        const colls = (await NSC.lastCollectives(job, comm, 3)).colls;
        if (!colls.length)
            return {t0: null, t1: null};
        const t0 = Math.min(...colls.map(c => c.start_ns));
        const t1 = Math.max(...colls.map(c => c.end_ns || c.last_arrival_ns || c.start_ns));
        const pad = Math.max(1000, Math.round((t1 - t0) * 0.05));
        return {t0: Math.max(0, t0 - pad), t1: t1 + pad};
    }

    function zoom(factor, at) {
        const span = (view.t1 - view.t0) * factor;
        const frac = (at - view.t0) / (view.t1 - view.t0);
        view = {t0: at - frac * span, t1: at - frac * span + span};
        draw();
    }

    function toggle(rank) {
        if (!expanded.delete(rank))
            expanded.add(rank);
        relayout();
    }

    function interact() {
        let drag = null;
        canvas.addEventListener('wheel', e => {
            e.preventDefault();
            zoom(e.deltaY < 0 ? 0.8 : 1.25, e.offsetX > LABEL_W ? t(e.offsetX) : (view.t0 + view.t1) / 2);
        }, {passive: false});
        canvas.addEventListener('mousedown', e => {
            drag = {x: e.offsetX, view: Object.assign({}, view), moved: false};
        });
        canvas.addEventListener('mousemove', e => {
            if (!drag)
                return;
            const dt = (e.offsetX - drag.x) / (canvas.width - LABEL_W) * (drag.view.t1 - drag.view.t0);
            drag.moved = drag.moved || Math.abs(e.offsetX - drag.x) > 3;
            view = {t0: drag.view.t0 - dt, t1: drag.view.t1 - dt};
            draw();
        });
        canvas.addEventListener('mouseup', e => {
            const clicked = drag && !drag.moved;
            drag = null;
            const row = rows[Math.floor(e.offsetY / ROW_H)];
            if (clicked && row && row.head && e.offsetX < LABEL_W)
                return toggle(row.rank);
            const ev = clicked ? hit(e.offsetX, e.offsetY) : null;
            if (ev)
                details(ev);
        });
        const mid = () => (view.t0 + view.t1) / 2;
        document.getElementById('zoomin').addEventListener('click', () => zoom(0.5, mid()));
        document.getElementById('zoomout').addEventListener('click', () => zoom(2, mid()));
        document.getElementById('reset').addEventListener('click', () => {
            view = Object.assign({}, full);
            draw();
        });
        document.getElementById('expand').addEventListener('click', e => {
            const ranks = [...new Set(events.map(ev => ev.rank))];
            const open = ranks.length && ranks.every(r => expanded.has(r));
            expanded.clear();
            if (!open)
                ranks.forEach(r => expanded.add(r));
            e.target.textContent = open ? 'Expand all ranks' : 'Close all ranks';
            relayout();
        });
        document.getElementById('more').addEventListener('click', () => page().then(draw).catch(NSC.fail));
        document.getElementById('download').addEventListener('click', () => download().catch(NSC.fail));
        document.getElementById('perfetto').addEventListener('click', () => downloadPerfetto().catch(NSC.fail));
        form.addEventListener('submit', e => {
            e.preventDefault();
            const w = formWindow();
            if (typeof w === 'string') {
                document.getElementById('loaded').textContent = w;
                return;
            }
            win = w;
            load().catch(NSC.fail);
        });
        window.addEventListener('resize', draw);
    }

    /* Every page of the window, as one trace file. */
    async function download() {
        const w = NSCTrace.writer();
        let next = null;
        do {
            const res = await NSC.ndjson('timeline', windowParams(Object.assign({limit: 100000}, next ? {cursor: next} : {})));
            if (!res.end)
                throw new NSC.ApiError('the timeline stream was cut off; download again');
            w.add(res.header, res.items);
            next = res.end.next_cursor;
        } while (next);
        save(w.blob(), '.json');
    }

    /* The window as `ncclscope export --format perfetto` writes it, written
     * by the collector (/api/v1/export). */
    async function downloadPerfetto() {
        const f = new FormData(form);
        save(await NSC.blob('export', {job, comm, t0_ns: win.t0, t1_ns: win.t1, rank: f.get('rank').trim(),
                                       type: f.get('type').trim(), format: 'perfetto'}), '.pftrace');
    }

    function save(data, ext) {
        const a = el('a', {href: URL.createObjectURL(data),
                           download: 'ncclscope-' + (comm || 'comm') + '-' + (win.t0 !== null ? win.t0 : 'all') + ext});
        document.body.append(a);
        a.click();
        a.remove();
    }

    NSC.start('timeline.html', async () => {
        if (!comm)
            throw new NSC.ApiError('no communicator: open this page from the overview or a communicator page');
        const comms = await NSC.api('comms', {job});
        job = comms.job;
        const c = comms.comms.find(x => x.comm === comm || x.name === comm);
        document.getElementById('title').textContent = 'Timeline of ' + (c ? c.label : comm) +
            ', job ' + job;
        for (const k of FILTERS)
            if (param(k))
                form.elements[k].value = param(k);
        const num = k => (param(k) !== null && param(k) !== '' ? Number(param(k)) : null);
        fallback = await defaultWindow();
        win = param('t0_ns') || param('t1_ns') ? {t0: num('t0_ns'), t1: num('t1_ns')} : fallback;
        interact();
        await load();
        if (param('expand') === '1')
            events.forEach(e => expanded.add(e.rank));
        relayout();
    });
})();
