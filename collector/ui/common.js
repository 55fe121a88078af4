/* common.js: what every page of the web view shares: the JSON API calls, the
 * top bar, number formatting, and the page's record of errors.
 *
 * Errors (uncaught exceptions, rejected promises, console.error, failed API
 * calls) are shown in a banner and counted in <html data-js-errors> and
 * <html data-api-errors>, so a person and tests/ui see them alike. A page sets
 * <body data-state="ready"> once it has drawn what it fetched.
 */
'use strict';

const NSC = (() => {
    const root = document.documentElement;
    const counts = {js: 0, api: 0};

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

    async function fetchText(path, p) {
        const r = await fetch('/api/v1/' + path + query(p), {credentials: 'same-origin'});
        const text = await r.text();
        if (!r.ok) {
            let msg = text;
            try { msg = JSON.parse(text).error; } catch (e) { /* not JSON: keep the text */ }
            throw new ApiError(path + ': ' + r.status + ' ' + msg);
        }
        return text;
    }
    /* GET /api/v1/<path>: its JSON; throws with the API's error message. */
    async function api(path, p) {
        return JSON.parse(await fetchText(path, p));
    }
    /* A streamed (NDJSON) endpoint: {header, items, end}; end is null when
     * the stream was cut off before its end line. */
    async function ndjson(path, p) {
        const lines = (await fetchText(path, p)).split('\n').filter(l => l);
        const out = {header: null, items: [], end: null};
        for (const l of lines) {
            const v = JSON.parse(l);
            if (!Array.isArray(v) && v.kind === 'header')
                out.header = v;
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
                       el('span', {class: 'ctx'}, job ? 'job ' + job : '', comm ? ' / comm ' + comm : ''));
        document.body.prepend(bar);
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

    return {el, param, link, api, ndjson, fmtNs, fmtBytes, fmtNum, start, fail, statusComm, ApiError};
})();
