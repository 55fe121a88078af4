/* comm.js: one communicator (comm.html?job=J&comm=C[&last=N]): its latest
 * collectives (the last N, default 60, of each function by the status's
 * highest seq) as a heat map of ranks x collectives coloured by each rank's
 * wait, and as a table. Above them, the verdicts of diagnose that concern
 * it (/api/v1/diagnose?comm=C: slow link, stall, mismatch, missing ranks,
 * ...), each linked to the timeline at its place: its ranks (and peer),
 * opened into their lanes, over the collective at its seq.
 *
 * The straggler is the stats endpoint's over the seqs shown (one
 * definition: docs/api-figures.md, "Figures"); its row is marked (class
 * "straggler") and outlined. A figure the API marks uncertain is greyed
 * (class "uncertain") with its reason as its title, and durations and skews
 * carry their error bounds. Colour scales run from 0 to the largest value
 * shown.
 */
'use strict';

(() => {
    const {el, param, link, fmtNs, fmtBytes, fmtNum} = NSC;
    const ROW_H = 18, MAX_COLS = 400;
    const comm = param('comm');
    let job = param('job');
    let colls = [], nranks = 0, straggler = null, hosts = {};

    const median = xs => {
        const s = xs.filter(x => x !== null && x !== undefined).sort((a, b) => a - b);
        return s.length ? s[Math.floor((s.length - 1) / 2)] : null;
    };

    /* The straggler of the collectives shown, as the stats endpoint defines it. */
    async function findStraggler() {
        if (!colls.length)
            return null;
        const seqs = colls.map(c => c.seq);
        const st = await NSC.api('stats', {job, comm, seq: Math.min(...seqs) + '-' + Math.max(...seqs)});
        return st.straggler ? {rank: st.straggler.rank, own: st.straggler.late_of_its_own, of: st.straggler.collectives} : null;
    }

    /* A time with its bound: "1.2 ms ± 40 us". */
    const withErr = (ns, err) => fmtNs(ns) + (err ? ' \u00b1 ' + fmtNs(err) : '');

    /* Each rank's value at each collective: wait_ns, or arrival - first arrival. */
    function values(metric) {
        return colls.map(c => {
            const v = new Array(nranks).fill(null);
            const first = Math.min(...c.ranks.filter(r => r.arrival_ns !== null).map(r => r.arrival_ns));
            for (const r of c.ranks)
                if (r.arrival_ns !== null && r.rank < nranks)
                    v[r.rank] = metric === 'wait' ? r.wait_ns : r.arrival_ns - first;
            return v;
        });
    }

    /* White (0) to dark red (max). */
    function colour(v, max) {
        const t = max > 0 ? Math.min(1, v / max) : 0;
        return 'rgb(' + Math.round(255 - 75 * t) + ',' + Math.round(245 - 225 * t) + ',' + Math.round(240 - 220 * t) + ')';
    }

    function drawHeatmap() {
        const metric = document.getElementById('metric').value;
        const vals = values(metric);
        /* a reduce, not a spread: 400 collectives x 1000 ranks is too many arguments */
        const max = vals.reduce((m, col) => col.reduce((a, v) => (v !== null && v > a ? v : a), m), 0);
        const box = document.getElementById('heatmap');
        /* cells as wide as a few collectives allow, at least 4 px */
        const COL_W = Math.max(4, Math.min(36, Math.floor(900 / Math.max(1, colls.length))));
        const canvas = el('canvas', {width: Math.max(1, colls.length * COL_W), height: nranks * ROW_H});
        const g = canvas.getContext('2d');
        const labels = [];
        for (let r = 0; r < nranks; r++) {
            const rowVals = vals.map(v => v[r]);
            const isStraggler = straggler && straggler.rank === r;
            labels.push(el('div', {class: 'hm-row' + (isStraggler ? ' straggler' : ''), 'data-rank': r,
                                   'data-median-ns': median(rowVals), title: 'median ' + fmtNs(median(rowVals))},
                           'rank ' + r + (hosts[r] ? ' ' + hosts[r] : ''),
                           isStraggler ? el('span', {class: 'tag bad'}, 'straggler') : ''));
            rowVals.forEach((v, i) => {
                g.fillStyle = v === null ? '#9aa0a6' : colour(v, max);
                g.fillRect(i * COL_W, r * ROW_H, COL_W - 1, ROW_H - 1);
            });
        }
        if (straggler) {
            g.strokeStyle = '#1a56db';
            g.lineWidth = 2;
            g.strokeRect(1, straggler.rank * ROW_H + 1, canvas.width - 2, ROW_H - 2);
        }
        canvas.addEventListener('click', e => showCell(vals, metric, Math.floor(e.offsetX / COL_W), Math.floor(e.offsetY / ROW_H)));
        box.setAttribute('data-ranks', nranks);
        box.setAttribute('data-collectives', colls.length);
        box.setAttribute('data-max-ns', max);
        box.replaceChildren(el('div', {class: 'hm-labels'}, labels), el('div', {class: 'hm-cells'}, canvas),
                            el('div', {class: 'legend'}, el('span', {class: 'swatch', style: 'background:' + colour(0, 1)}), '0 ',
                               el('span', {class: 'swatch', style: 'background:' + colour(1, 1)}), fmtNs(max) + ' ',
                               el('span', {class: 'swatch', style: 'background:#9aa0a6'}), 'not arrived'));
    }

    function windowOf(c) {
        const end = c.end_ns || c.last_arrival_ns || c.start_ns;
        const pad = Math.max(1000, Math.round((end - c.start_ns) * 0.1));
        return {job, comm, t0_ns: Math.max(0, c.start_ns - pad), t1_ns: end + pad};
    }

    /* Where a problem is on the timeline: its rank and peer, opened, over
     * the collective at its seq (the first to start, whatever function). */
    async function placeOf(p) {
        const at = {job, comm, rank: [p.rank, p.peer].filter(r => r !== null && r !== undefined).join(',') || null,
                    expand: 1};
        if (p.seq === null || p.seq === undefined)
            return at;
        const res = await NSC.ndjson('collectives', {job, comm, seq: p.seq, limit: 1});
        return res.items.length ? Object.assign(windowOf(res.items[0]), at) : at;
    }

    async function drawVerdicts(comm) {
        const d = await NSC.api('diagnose', {job, comm});
        const places = await Promise.all(d.problems.map(placeOf));
        const box = document.getElementById('verdicts');
        box.setAttribute('data-problems', d.problems.length);
        box.replaceChildren(d.problems.length ? el('ul', {class: 'verdicts'}, d.problems.map((p, i) =>
            el('li', {class: 'bad', 'data-kind': p.kind, 'data-rank': p.rank, 'data-peer': p.peer, 'data-seq': p.seq},
               el('span', {class: 'tag bad'}, p.kind.replace(/_/g, ' ')), ' ', p.evidence, ' ',
               el('a', {class: 'place', href: link('timeline.html', places[i])}, 'on the timeline'))))
            : el('p', {class: 'ok-line', 'data-kind': 'ok'}, d.verdict),
            d.problems_not_shown ? el('p', {class: 'note'}, d.problems_not_shown + ' more not shown') : '');
    }

    /* Each channel's ring in order where the ProxyOps show it whole; else the
     * network legs seen, saying that the order within a node is unknown
     * (ProxyOps trace only the network legs), never a blank. */
    function drawRings(topo) {
        const box = document.getElementById('rings');
        const unknown = topo.channels.filter(ch => !ch.complete).length;
        box.setAttribute('data-channels', topo.channels.length);
        box.setAttribute('data-unknown', topo.channels.length ? unknown : 'all');
        if (!topo.channels.length) {
            box.replaceChildren(el('p', {class: 'note'}, 'Rings unknown: no ProxyOp seen. Within a node NCCL\'s proxy ' +
                                   'traces no leg, so a communicator on one node shows none (or the event mask left ' +
                                   'ProxyOps out).'));
            return;
        }
        box.replaceChildren(el('ul', {class: 'rings'}, topo.channels.map(ch => el('li', {'data-channel': ch.channel},
            'channel ' + ch.channel + ': ',
            ch.complete ? ch.ring.concat([ch.ring[0]]).join(' \u2192 ') + ' (ring)'
                        : ch.send_peers.map(p => p[0] + ' \u2192 ' + p[1]).join(', '),
            ch.complete ? '' : el('span', {class: 'note'}, ' network legs only: the ring within each node is unknown ' +
                                                           '(ProxyOps trace only the network legs)')))));
    }

    function showCell(vals, metric, i, r) {
        const c = colls[i];
        if (!c || r >= nranks)
            return;
        const rk = c.ranks.find(x => x.rank === r);
        document.getElementById('cell').replaceChildren(
            el('b', {}, c.func + ' seq ' + c.seq + ', rank ' + r + ': '),
            rk && rk.arrival_ns !== null ? metric + ' ' + fmtNs(vals[i][r]) + ', own duration ' +
                withErr(rk.duration_ns, rk.duration_err_ns) + ', busBW ' + fmtNum(rk.busbw_gbps, 3) + ' GB/s ' +
                (rk.uncertain ? '(uncertain: ' + rk.uncertain_reason + ') ' : '') : 'not arrived ',
            el('a', {href: link('timeline.html', windowOf(c))}, 'timeline of this collective'));
    }

    function drawTable() {
        const heads = ['func', 'seq', 'started (UTC)', 'bytes', 'algo', 'ranks', 'missing', 'duration', 'busBW GB/s', 'skew',
                       'last rank', 'mismatch', ''];
        const rows = colls.slice().reverse().map(c => el('tr', {
            class: [c.missing_ranks.length ? 'missing' : '', c.end_ns === null ? 'open' : '', c.mismatch ? 'bad' : '',
                    c.uncertain ? 'uncertain' : ''].join(' ').trim() || null,
            title: c.uncertain ? 'uncertain: ' + c.uncertain_reason : null, 'data-func': c.func, 'data-seq': c.seq},
            [c.func, c.seq, el('span', {class: 'utc'}, c.start_utc || 'wall clock unknown'), fmtBytes(c.bytes), (c.algo || '-') + '/' + (c.proto || '-'), c.ranks_seen + ' / ' + c.nranks,
             c.missing_ranks.join(',') || '-', c.end_ns === null ? 'in flight' : withErr(c.duration_ns, c.duration_err_ns),
             fmtNum(c.busbw_gbps, 3), withErr(c.skew_ns, c.skew_err_ns), c.last_rank === null ? '-' : c.last_rank, c.mismatch || '-',
             el('a', {href: link('timeline.html', windowOf(c))}, 'timeline')].map(v => el('td', {}, v))));
        document.getElementById('collectives').replaceChildren(el('table', {class: 'grid'},
            el('thead', {}, el('tr', {}, heads.map(h => el('th', {}, h)))), el('tbody', {}, rows)));
    }

    async function load() {
        const last = Math.max(1, Math.min(1000, Number(document.getElementById('last').value) || 60));
        const got = await NSC.lastCollectives(job, comm, last);
        const sc = got.status;
        colls = got.colls;
        if (colls.length > MAX_COLS)
            colls = colls.slice(colls.length - MAX_COLS);
        straggler = await findStraggler();
        document.getElementById('summary').replaceChildren(
            colls.length + ' collectives shown', sc ? ', ' + sc.ranks_seen + ' of ' + sc.nranks + ' ranks seen' : '',
            straggler ? el('span', {class: 'tag bad', id: 'straggler'}, 'straggler: rank ' + straggler.rank + ', late of its own at ' +
                           straggler.own + ' of ' + straggler.of + ' complete collectives') : el('span', {class: 'tag ok'}, 'no straggler'));
        drawHeatmap();
        drawTable();
    }

    NSC.start('comm.html', async () => {
        const comms = await NSC.api('comms', {job});
        job = comms.job;
        const c = comms.comms.find(x => x.comm === comm || x.name === comm);
        if (!c)
            throw new NSC.ApiError('no communicator ' + comm + ' in job ' + job);
        nranks = c.nranks;
        document.getElementById('title').textContent = 'Communicator ' + c.label + ', job ' + job;
        document.getElementById('id').textContent = 'id ' + c.comm;
        if (param('last'))
            document.getElementById('last').value = param('last');
        document.getElementById('metric').addEventListener('change', drawHeatmap);
        document.getElementById('last').addEventListener('change', () => load().catch(NSC.fail));
        const verdicts = drawVerdicts(c.comm).catch(NSC.fail);
        const topo = await NSC.api('topology', {job, comm: c.comm});
        for (const r of topo.ranks)
            hosts[r.rank] = r.host;
        drawRings(topo);
        await load();
        await verdicts;
    });
})();
