/* overview.js: the job overview (index.html): what `ncclscope status` shows,
 * kept live by the collector's server-sent events (/api/v1/live): each
 * summary updates the counters and the communicators' rates; the status is
 * read again when the summary's counts of hangs, lagging ranks or processes
 * change, and every STATUS_EVERY_MS besides.
 */
'use strict';

(() => {
    const {el, link, fmtNs, fmtNum} = NSC;
    const STATUS_EVERY_MS = 5000;
    let lastCounts = '';
    let statusAt = 0;

    function card(id, title, value, bad) {
        return el('div', {class: 'card' + (bad ? ' bad' : ''), id: 'card-' + id},
                  el('div', {class: 'value'}, value), el('div', {class: 'title'}, title));
    }
    function drawCards(s, live) {
        const procs = {alive: 0, dead: 0, finished: 0, silent: 0};
        for (const p of s.processes || [])
            procs[p.state] = (procs[p.state] || 0) + 1;
        const agents = (s.agents || []).filter(a => a.state === 'alive').length;
        document.getElementById('cards').replaceChildren(
            card('events', 'events stored', s.events_total),
            card('rate', 'events/s', live ? fmtNum(live.events_per_s, 3) : '-'),
            card('alive', 'processes alive', procs.alive),
            card('finished', 'finished', procs.finished),
            card('dead', 'dead or silent', procs.dead + procs.silent, procs.dead + procs.silent > 0),
            card('agents', 'agents alive', agents + ' / ' + (s.agents || []).length),
            card('lagging', 'lagging ranks', s.lagging, s.lagging > 0),
            card('hangs', 'hung collectives', s.hung_collectives, s.hung_collectives > 0));
    }

    function commState(c) {
        if (c.hung_collectives.length)
            return el('span', {class: 'tag bad'}, c.hung_collectives.length + ' hung');
        if (c.lagging.length)
            return el('span', {class: 'tag warn'}, c.lagging.length + ' lagging');
        return el('span', {class: 'tag ok'}, c.ranks_seen < c.nranks ? 'joining' : 'ok');
    }
    /* None in the last window (a finished communicator): no figure, not 0. */
    const fmtBw = gbps => gbps > 0 ? fmtNum(gbps, 3) : '-';
    function commRow(job, c) {
        const p = {job: job.job, comm: c.comm};
        return el('tr', {'data-comm': job.job + '/' + c.comm, class: c.hung_collectives.length ? 'hung' : null},
                  el('td', {class: 'name'}, el('a', {href: link('comm.html', p)}, c.label)),
                  el('td', {class: 'mono'}, c.comm),
                  el('td', {class: 'num'}, c.ranks_seen + ' / ' + c.nranks),
                  el('td', {class: 'num rate'}, fmtNum(c.events_per_s, 3)),
                  el('td', {class: 'num bw'}, fmtBw(c.bus_bw_gbps)),
                  el('td', {}, (c.funcs || []).map(f => f.func + ' ' + f.max_seq).join(', ')),
                  el('td', {}, commState(c)),
                  el('td', {}, el('a', {href: link('timeline.html', p)}, 'timeline'), ' ',
                     c.hangs.length || c.lagging.length ? el('a', {href: link('hang.html', {job: job.job})}, 'hang') : ''));
    }
    /* The self-cost guard's word: what the profiler costs, and while it is
     * over its budget (NCCLSCOPE_BUDGET_PCT), which detail it does not record. */
    function costNote(job) {
        if (job.profiler_cost_pct === null || job.profiler_cost_pct === undefined)
            return '';
        let text = ' profiler cost ' + job.profiler_cost_pct.toFixed(1) + ' % of collective time';
        if ((job.shed || []).length)
            text += '; over its budget, not recording ' + job.shed.join(', ') + ' (' + job.shed_events + ' events)';
        return el('span', {class: 'note cost', 'data-shed': (job.shed || []).join(',')}, text);
    }
    function drawJobs(s) {
        const box = document.getElementById('jobs');
        box.replaceChildren();
        if (!(s.jobs || []).length)
            box.append(el('p', {class: 'empty'}, 'No job yet: no profiler event reached this collector.'));
        for (const job of s.jobs || []) {
            const drops = job.events_dropped ? ' (' + job.events_dropped + ' events dropped by the plugins)' : '';
            box.append(el('h2', {}, 'Job ' + job.job, el('span', {class: 'note'}, drops), costNote(job)),
                       el('table', {class: 'grid'},
                          el('thead', {}, el('tr', {}, ['communicator', 'id', 'ranks', 'events/s', 'busBW GB/s',
                                                        'progress (max seq)', 'state', ''].map(h => el('th', {}, h)))),
                          el('tbody', {}, job.comms.map(c => commRow(job, c)))));
        }
    }

    /* Lagging ranks, hung collectives and dead processes, most severe first. */
    function drawProblems(s) {
        const items = [];
        for (const job of s.jobs || []) {
            if (job.verdict_comm) {  /* an ended job: no rank of it lags or hangs any more, its verdict stays */
                const vc = job.comms.find(c => c.comm === job.verdict_comm);
                items.push(el('li', {class: 'bad', 'data-ended': job.job}, 'job ' + job.job + ' ' + job.verdict +
                              ' on ' + (vc ? vc.label : job.verdict_comm) + ' ', el('a', {href: link('hang.html', {job: job.job})}, 'details')));
            }
            for (const c of job.comms) {
                const where = c.label + ' (job ' + job.job + ')';
                for (const h of c.hangs)
                    items.push(el('li', {class: 'bad'}, 'hung: rank ' + h.rank + ' in ' + h.func + ' seq ' + h.seq +
                                  ' for ' + fmtNs(h.for_ns) + ' on ' + where + ' ',
                                  el('a', {href: link('hang.html', {job: job.job})}, 'details')));
                for (const l of c.lagging)
                    items.push(el('li', {class: 'warn'}, 'lagging: rank ' + l.rank + ' at ' + l.func + ' seq ' + l.seq +
                                  ' of ' + l.max_seq + ' for ' + fmtNs(l.for_ns) + ' on ' + where));
            }
        }
        for (const p of s.processes || [])
            if (p.state === 'dead' || p.state === 'silent')
                items.push(el('li', {class: 'bad'}, p.state + ': ' + p.host + ' pid ' + p.pid + ' (job ' + p.job + ')' +
                              (p.reason ? ', ' + p.reason : '')));
        document.getElementById('problems').replaceChildren(
            items.length ? el('ul', {class: 'problems'}, items) : el('p', {class: 'ok-line'}, 'No problem seen.'));
    }

    function table(rows, heads, cells) {
        return el('table', {class: 'grid'}, el('thead', {}, el('tr', {}, heads.map(h => el('th', {}, h)))),
                  el('tbody', {}, rows.map(r => el('tr', {class: r.state}, cells(r).map(c => el('td', {}, c))))));
    }
    /* Hosts by name, as every table lists them (then pid, agent). */
    const byHost = key => (a, b) => a.host.localeCompare(b.host) || (a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : 0);
    function drawTables(s) {
        const now = s.now_ns;
        document.getElementById('processes').replaceChildren(table((s.processes || []).slice().sort(byHost('pid')),
            ['host', 'pid', 'job', 'state', 'last seen', 'events', 'dropped'],
            p => [p.host, p.pid, p.job, p.state, fmtNs(now - p.last_seen_ns) + ' ago', p.events_emitted, p.events_dropped]));
        document.getElementById('agents').replaceChildren(table((s.agents || []).slice().sort(byHost('agent')),
            ['agent', 'host', 'state', 'last seen'],
            a => [a.agent, a.host, a.state, fmtNs(now - a.last_seen_ns) + ' ago']));
    }

    let liveSummary = null;
    async function refresh() {
        statusAt = Date.now();
        const s = await NSC.api('status');
        drawCards(s, liveSummary);
        drawProblems(s);
        drawJobs(s);
        drawTables(s);
    }

    /* A summary: counters and rates now; the status again if counts moved. */
    function onSummary(ev) {
        const m = JSON.parse(ev.data);
        liveSummary = m;
        const live = document.getElementById('live');
        live.textContent = 'live ' + new Date().toLocaleTimeString();
        live.className = 'live on';
        live.setAttribute('data-summaries', String(Number(live.getAttribute('data-summaries') || 0) + 1));
        document.querySelector('#card-rate .value').textContent = fmtNum(m.events_per_s, 3);
        for (const c of m.comms || []) {
            const row = document.querySelector('tr[data-comm="' + CSS.escape(c.job + '/' + c.comm) + '"]');
            if (row) {
                row.querySelector('.rate').textContent = fmtNum(c.events_per_s, 3);
                row.querySelector('.bw').textContent = fmtBw(c.bus_bw_gbps);
            }
        }
        const counts = [m.hangs, m.hung_collectives, m.lagging, m.processes_alive, m.processes_dead, m.agents_alive].join();
        if (counts !== lastCounts || Date.now() - statusAt > STATUS_EVERY_MS) {
            lastCounts = counts;
            refresh().catch(NSC.fail);
        }
    }

    NSC.start('index.html', async () => {
        await refresh();
        const es = new EventSource('/api/v1/live');
        es.addEventListener('summary', onSummary);
        es.onerror = () => {
            const live = document.getElementById('live');
            live.textContent = 'reconnecting';
            live.className = 'live off';
        };
    });
})();
