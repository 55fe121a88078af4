/* common.js: what every page of the web view shares: the JSON API calls, the
 * top bar with its loading sign, number, time and communicator formatting,
 * and the page's record of errors.
 *
 * Errors (uncaught exceptions, rejected promises, console.error, failed API
 * calls) are shown in a banner and counted in <html data-js-errors> and
 * <html data-api-errors>, so a person and tests/ui see them alike. A page sets
 * <body data-state="ready"> once it has drawn what it fetched.
 *
 * While an API call is under way the top bar says so ("loading status,
 * collectives"), and <html data-loading> counts the calls: a slow answer
 * leaves no page blank without a word.
 */
'use strict';

const NSC = (() => {
    const root = document.documentElement;
    const counts = {js: 0, api: 0};
    const pending = new Map();  /* endpoint -> calls under way */

    function banner(text) {
        let b = document.getElementById('errors');
        if (!b) {
            b = el('div', {id: 'errors', class: 'errors'});
            document.body.prepend(b);
        }
        b.append(el('div', {}, text));
    }
    function record(kind, text) {
        counts[kind]++;
        root.setAttribute('data-' + kind + '-errors', String(counts[kind]));
        if (document.body)
            banner((kind === 'api' ? 'API: ' : 'script: ') + text);
    }
    root.setAttribute('data-js-errors', '0');
    root.setAttribute('data-api-errors', '0');
    window.addEventListener('error', e => record('js', e.message + ' (' + e.filename + ':' + e.lineno + ')'));
    window.addEventListener('unhandledrejection', e => record('js', String(e.reason)));
    const consoleError = console.error.bind(console);
    console.error = (...args) => {
        record('js', args.join(' '));
        consoleError(...args);
    };

    /* el('a', {href: u, class: 'x'}, child, ...): an element; strings become text. */
    function el(tag, attrs, ...children) {
        const e = document.createElement(tag);
        for (const [k, v] of Object.entries(attrs || {}))
            if (k === 'style')
                e.style.cssText = v;  /* the CSP refuses style attributes, not the CSSOM */
            else if (v !== null && v !== undefined && v !== false)
                e.setAttribute(k, v === true ? '' : String(v));
        for (const c of children.flat())
            if (c !== null && c !== undefined)
                e.append(c instanceof Node ? c : String(c));
        return e;
    }

    const params = new URLSearchParams(location.search);
    /* The token came in the address (the collector has set its cookie by
     * now): take it out of the address bar and the history. */
    if (params.has('token')) {
        params.delete('token');
        const rest = params.toString();
        history.replaceState(null, '', location.pathname + (rest ? '?' + rest : '') + location.hash);
    }
    const param = name => params.get(name);

    function query(p) {
        const q = new URLSearchParams();
        for (const [k, v] of Object.entries(p || {}))
            if (v !== null && v !== undefined && v !== '')
                q.set(k, String(v));
        const s = q.toString();
        return s ? '?' + s : '';
    }
    const link = (page, p) => page + query(p);

    /* What the collector refused or could not answer (not a script's fault). */
    class ApiError extends Error {}

    function showLoading() {
        const n = [...pending.values()].reduce((a, b) => a + b, 0);
        root.setAttribute('data-loading', String(n));
        const sign = document.getElementById('loading');
        if (sign) {
            sign.textContent = n ? 'loading ' + [...pending.keys()].join(', ') : '';
            sign.classList.toggle('on', n > 0);
        }
    }
    function busy(path, d) {
        const n = (pending.get(path) || 0) + d;
        if (n)
            pending.set(path, n);
        else
            pending.delete(path);
        showLoading();
    }

    /* GET /api/v1/<path>: its body as text or blob (as); throws with the
     * API's error message. */
    async function body(path, p, as) {
        busy(path, 1);
        try {
            const r = await fetch('/api/v1/' + path + query(p), {credentials: 'same-origin'});
            if (!r.ok) {
                const text = await r.text();
                let msg = text;
                try { msg = JSON.parse(text).error; } catch (e) { /* not JSON: keep the text */ }
                throw new ApiError(path + ': ' + r.status + ' ' + msg);
            }
            return await r[as]();
        } finally {
            busy(path, -1);
        }
    }
    const fetchText = (path, p) => body(path, p, 'text');
    /* A binary answer (a Perfetto trace) as a Blob. */
    const blob = (path, p) => body(path, p, 'blob');
    /* An answer's wall_offset_ns (UTC ns since the epoch = an answer's ns
     * time + wall_offset_ns) as a BigInt, read from the text: JSON numbers
     * are doubles, which cannot hold it to the nanosecond. null without it. */
    function wallOffset(text) {
        const m = /"wall_offset_ns":(-?\d+)/.exec(text);
        return m ? BigInt(m[1]) : null;
    }
    /* GET /api/v1/<path>: its JSON (with wallOffset set when the answer has
     * one); throws with the API's error message. */
    async function api(path, p) {
        const text = await fetchText(path, p);
        return Object.assign(JSON.parse(text), {wallOffset: wallOffset(text)});
    }
    /* A streamed (NDJSON) endpoint: {header, items, end}; end is null when
     * the stream was cut off before its end line. */
    async function ndjson(path, p) {
        const lines = (await fetchText(path, p)).split('\n').filter(l => l);
        const out = {header: null, items: [], end: null};
        for (const l of lines) {
            const v = JSON.parse(l);
            if (!Array.isArray(v) && v.kind === 'header')
                out.header = Object.assign(v, {wallOffset: wallOffset(l)});
            else if (!Array.isArray(v) && v.kind === 'end')
                out.end = v;
            else
                out.items.push(v);
        }
        return out;
    }

    function fmtNs(ns) {
        if (ns === null || ns === undefined)
            return '-';
        const a = Math.abs(ns);
        if (a >= 1e9)
            return (ns / 1e9).toFixed(a >= 1e11 ? 0 : 2) + ' s';
        if (a >= 1e6)
            return (ns / 1e6).toFixed(a >= 1e8 ? 0 : 2) + ' ms';
        if (a >= 1e3)
            return (ns / 1e3).toFixed(a >= 1e5 ? 0 : 2) + ' us';
        return ns + ' ns';
    }
    function fmtBytes(b) {
        if (b === null || b === undefined)
            return '-';
        const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
        let i = 0;
        while (b >= 1024 && i < units.length - 1) {
            b /= 1024;
            i++;
        }
        return (i ? b.toFixed(1) : String(b)) + ' ' + units[i];
    }
    /* Aligned time ns as UTC ISO-8601 to the microsecond, with the answer's
     * wallOffset; null when the wall clock is not known. */
    function fmtWall(ns, offset) {
        if (offset === null || offset === undefined)
            return null;
        const w = offset + BigInt(Math.round(ns));
        const us = String((w % 1000000n) / 1000n).padStart(3, '0');
        return new Date(Number(w / 1000000n)).toISOString().replace('Z', us + 'Z');
    }
    /* A time in human units ("2.5 ms", "500us", "3 s", "5 m", "1 h") as ns;
     * NaN when it is not one. */
    const UNITS = {ns: 1, us: 1e3, 'µs': 1e3, ms: 1e6, s: 1e9, m: 60e9, min: 60e9, h: 3600e9};
    function parseDuration(text) {
        const m = /^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|µs|ms|s|min|m|h)\s*$/.exec(text);
        return m ? Math.round(Number(m[1]) * UNITS[m[2]]) : NaN;
    }

    /* digits significant digits below 1000, whole numbers above */
    const fmtNum = (v, digits) => (v === null || v === undefined ? '-' : Math.abs(v) >= 1000 || v === 0 ? Number(v).toFixed(0)
                                   : Number(v).toPrecision(digits));

    /* The top bar: the pages, with the job (and communicator) carried along. */
    function nav(active) {
        const job = param('job'), comm = param('comm');
        const pages = [['index.html', 'Overview', {job}], ['hang.html', 'Hang', {job}],
                       ['links.html', 'Links & hosts', {job, comm}]];
        if (comm)
            pages.push(['comm.html', 'Communicator', {job, comm}], ['timeline.html', 'Timeline', {job, comm}]);
        const bar = el('nav', {class: 'top'}, el('span', {class: 'brand'}, 'ncclscope'),
                       pages.map(([page, title, p]) =>
                           el('a', {href: link(page, p), class: page === active ? 'active' : null}, title)),
                       el('span', {id: 'loading', class: 'loading'}),
                       el('span', {class: 'ctx'}, job ? 'job ' + job : '', comm ? ' / comm ' + comm : ''));
        document.body.prepend(bar);
        showLoading();
    }

    /* An error caught by a page: counted as the API's or the script's. */
    const fail = e => record(e instanceof ApiError ? 'api' : 'js', e.message);

    /* Run the page's main function; an exception is shown, and the page is
     * marked ready either way so a test does not wait for nothing. */
    async function start(active, main) {
        nav(active);
        try {
            await main();
        } catch (e) {
            fail(e);
        }
        document.body.setAttribute('data-state', 'ready');
    }

    /* A communicator's entry in a status document (by id or name), or null. */
    function statusComm(status, job, comm) {
        const j = (status.jobs || []).find(x => x.job === job);
        return (j && j.comms.find(c => c.comm === comm || c.name === comm)) || null;
    }

    /* The last n collectives of each function of a communicator (by the
     * status's highest seq), in order of start. A collector restarted on its
     * store has no live progress to say which are last: then the last of the
     * first 1000 the store holds. */
    async function lastCollectives(job, comm, n) {
        const sc = statusComm(await api('status'), job, comm);
        const parts = sc ? await Promise.all(sc.funcs.map(f => ndjson('collectives', {
            job, comm, func: f.func, seq: Math.max(0, f.max_seq - n + 1) + '-' + f.max_seq, limit: n})))
            : [await ndjson('collectives', {job, comm, limit: 1000})];
        const byFunc = new Map();
        for (const c of parts.flatMap(p => p.items).sort((a, b) => a.start_ns - b.start_ns || a.seq - b.seq))
            byFunc.set(c.func, (byFunc.get(c.func) || []).concat([c]));
        return {status: sc, colls: [...byFunc.values()].flatMap(cs => cs.slice(-n)).sort((a, b) => a.start_ns - b.start_ns ||
                                                                                         a.seq - b.seq)};
    }

    return {el, param, link, api, ndjson, blob, fmtNs, fmtBytes, fmtNum, fmtWall, parseDuration, start, fail,
            lastCollectives, ApiError};
})();
