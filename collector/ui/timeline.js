/* timeline.js: a window of one communicator's events (timeline.html?job=J&
 * comm=C&t0_ns=..&t1_ns=.., and the form's other fields: rank, type, limit):
 * a row per rank and lane (event type, and channel), overlapping events of a
 * lane on rows beneath it; wheel zooms at the pointer, dragging pans, a click
 * shows the event's values. The window is read a page (limit, default 20000
 * events) at a time through the timeline query's cursor, so a large window
 * costs what was asked for; Next page adds the following one. Without
 * t0_ns/t1_ns the window is that of the communicator's last collectives.
 * Download fetches every page of the window and saves it as a Chrome JSON
 * trace (trace.js).
 */
'use strict';

(() => {
    const {el, param, fmtNs} = NSC;
    const ROW_H = 16, LABEL_W = 170, MAX_EVENTS = 1000000;
    const FIELDS = ['t0_ns', 't1_ns', 'rank', 'type', 'limit'];  /* the form's, also taken from the address */
    const form = document.getElementById('window');
    const canvas = document.getElementById('lanes');
    let job = param('job');
    const comm = param('comm');
    let header = null, cursor = null, rows = [], laneIndex = new Map(), count = 0;
    let full = {t0: 0, t1: 1}, view = {t0: 0, t1: 1};

    function windowParams(extra) {
        const f = new FormData(form);
        const p = {job, comm, format: 'compact', states: 0};
        for (const k of FIELDS)
            p[k] = f.get(k).trim();
        return Object.assign(p, extra);
    }

    /* An event goes on the first row of its lane that is free at its start. */
    function place(e) {
        const key = e.rank + '|' + e.lane;
        if (!laneIndex.has(key))
            laneIndex.set(key, []);
        const lane = laneIndex.get(key);
        let row = lane.find(r => r.freeAt <= e.start);
        if (!row) {
            row = {rank: e.rank, lane: e.lane, sub: lane.length, freeAt: 0, events: []};
            lane.push(row);
            rows.push(row);
        }
        row.freeAt = e.end === null ? Infinity : e.end + 1;
        row.events.push(e);
    }

    function sortRows() {
        const types = header.types;
        const order = r => types.indexOf(r.lane.split(' ')[0]);
        const ch = r => Number((r.lane.split(' ch')[1]) || -1);
        rows.sort((a, b) => a.rank - b.rank || order(a) - order(b) || ch(a) - ch(b) || a.lane.localeCompare(b.lane) || a.sub - b.sub);
    }

    function hue(name) {
        let h = 0;
        for (const c of name)
            h = (h * 31 + c.charCodeAt(0)) % 360;
        return h;
    }
    const x = t => LABEL_W + (t - view.t0) / (view.t1 - view.t0) * (canvas.width - LABEL_W);
    const t = px => view.t0 + (px - LABEL_W) / (canvas.width - LABEL_W) * (view.t1 - view.t0);

    function draw() {
        canvas.width = Math.max(400, document.getElementById('timeline').clientWidth);
        canvas.height = Math.max(ROW_H, rows.length * ROW_H);
        const g = canvas.getContext('2d');
        g.font = '11px sans-serif';
        g.textBaseline = 'middle';
        rows.forEach((row, i) => {
            const y = i * ROW_H;
            if (row.sub === 0) {
                g.fillStyle = i && rows[i - 1].rank !== row.rank ? '#888' : '#e3e3e3';
                g.fillRect(0, y, canvas.width, 1);
                g.fillStyle = '#222';
                g.fillText('rank ' + row.rank + ' ' + row.lane, 4, y + ROW_H / 2);
            }
            for (const e of row.events) {
                const end = e.end === null ? view.t1 : e.end;
                if (end < view.t0 || e.start > view.t1)
                    continue;
                const x0 = Math.max(LABEL_W, x(e.start)), x1 = Math.min(canvas.width, x(end));
                g.fillStyle = 'hsl(' + hue(e.name) + ',55%,' + (e.end === null ? '80%' : '55%') + ')';
                g.fillRect(x0, y + 2, Math.max(1, x1 - x0), ROW_H - 4);
                if (x1 - x0 > 40) {
                    g.fillStyle = '#111';
                    g.fillText(e.name, x0 + 2, y + ROW_H / 2, x1 - x0 - 4);
                }
            }
        });
        const box = document.getElementById('timeline');
        box.setAttribute('data-events', count);
        box.setAttribute('data-rows', rows.length);
        box.setAttribute('data-lanes', laneIndex.size);
        box.setAttribute('data-ranks', new Set(rows.map(r => r.rank)).size);
        box.setAttribute('data-more', cursor ? '1' : '0');
        box.setAttribute('data-view', Math.round(view.t0) + '-' + Math.round(view.t1));
        box.setAttribute('data-window', full.t0 + '-' + full.t1);
        document.getElementById('loaded').textContent = count + ' events in ' + laneIndex.size + ' lanes' +
            (cursor ? '; more remain in the window (Next page)' : '; the whole window') + '; shown ' +
            fmtNs(view.t1 - view.t0) + ' from t0_ns ' + Math.round(view.t0);
    }

    function details(e) {
        document.getElementById('details').replaceChildren(
            el('h3', {}, e.name + ' (' + e.type + '), rank ' + e.rank + ', ' + (e.end === null ? 'open' : fmtNs(e.end - e.start))),
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

    async function page() {
        const res = await NSC.ndjson('timeline', windowParams(cursor ? {cursor} : {}));
        if (!res.end)
            throw new NSC.ApiError('the timeline stream was cut off; load again');
        header = res.header;
        for (const r of res.items)
            place(NSCTrace.event(header, r));
        count += res.items.length;
        cursor = res.end.next_cursor;
        document.getElementById('more').disabled = !cursor || count >= MAX_EVENTS;
        sortRows();
    }

    async function load() {
        rows = [];
        laneIndex = new Map();
        count = 0;
        cursor = null;
        await page();
        const f = new FormData(form);
        /* no spread into Math.min: a page may hold a million events */
        let lo = Infinity, hi = -Infinity;
        for (const r of rows)
            for (const e of r.events) {
                lo = Math.min(lo, e.start);
                hi = Math.max(hi, e.end === null ? e.start : e.end);
            }
        full = {t0: Number(f.get('t0_ns')) || lo, t1: Number(f.get('t1_ns')) || hi};
        if (!(full.t1 > full.t0))
            full = {t0: 0, t1: 1};
        view = Object.assign({}, full);
        const p = {job, comm};
        for (const k of FIELDS)
            p[k] = f.get(k).trim();
        history.replaceState(null, '', NSC.link('timeline.html', p));
        draw();
    }

    /* Without a window: the span of the communicator's last collectives. */
    async function defaultWindow() {
        const status = await NSC.api('status');
        const sc = NSC.statusComm(status, job, comm);
        const parts = await Promise.all((sc ? sc.funcs : []).map(f => NSC.ndjson('collectives',
            {job, comm, func: f.func, seq: Math.max(0, f.max_seq - 2) + '-' + f.max_seq})));
        const colls = parts.flatMap(p => p.items);
        if (!colls.length)
            return;
        const t0 = Math.min(...colls.map(c => c.start_ns));
        const t1 = Math.max(...colls.map(c => c.end_ns || c.last_arrival_ns || c.start_ns));
        const pad = Math.max(1000, Math.round((t1 - t0) * 0.05));
        form.elements.t0_ns.value = t0 - pad;
        form.elements.t1_ns.value = t1 + pad;
    }

    function zoom(factor, at) {
        const span = (view.t1 - view.t0) * factor;
        const frac = (at - view.t0) / (view.t1 - view.t0);
        view = {t0: at - frac * span, t1: at - frac * span + span};
        draw();
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
            const ev = drag && !drag.moved ? hit(e.offsetX, e.offsetY) : null;
            drag = null;
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
        document.getElementById('more').addEventListener('click', () => page().then(draw).catch(NSC.fail));
        document.getElementById('download').addEventListener('click', () => download().catch(NSC.fail));
        form.addEventListener('submit', e => {
            e.preventDefault();
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
        const a = el('a', {href: URL.createObjectURL(w.blob()),
                           download: 'ncclscope-' + (comm || 'comm') + '-' + (form.elements.t0_ns.value || 'all') + '.json'});
        document.body.append(a);
        a.click();
        a.remove();
    }

    NSC.start('timeline.html', async () => {
        if (!comm)
            throw new NSC.ApiError('no communicator: open this page from the overview or a communicator page');
        if (!job)
            job = (await NSC.api('comms')).job;
        document.getElementById('title').textContent = 'Timeline of ' + comm + ' (job ' + job + ')';
        for (const k of FIELDS)
            if (param(k))
                form.elements[k].value = param(k);
        if (!param('t0_ns') && !param('t1_ns'))
            await defaultWindow();
        interact();
        await load();
    });
})();
