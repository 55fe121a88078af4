/* hang.js: the stuck view (hang.html?job=J, every job without it): each
 * hung collective of the status (hung_collectives: the one definition the
 * Overview counts too), named by function and seq, with the ranks inside it
 * and for how long, the ranks that never arrived with host, pid and process
 * state (live status), and each rank's
 * arrival as the store matched it (collectives: its kernel start with its
 * bound, greyed when uncertain); above them, per job, the
 * verdict and problems of diagnose's analysis (/api/v1/diagnose: the cause
 * and the place, e.g. a stall's rank, channel and step). Read again every
 * REFRESH_MS.
 */
'use strict';

(() => {
    const {el, param, link, fmtNs} = NSC;
    const REFRESH_MS = 5000;

    function rankLine(c, procs, rank, why) {
        const r = c.ranks.find(x => x.rank === rank) || {};
        const p = procs.find(x => x.host === r.host && x.pid === r.pid);
        return el('li', {class: 'behind', 'data-rank': rank},
                  'rank ' + rank + (r.host ? ' on ' + r.host + ' pid ' + r.pid : '') + ': ' + why +
                  (p ? ' (process ' + p.state + (p.reason ? ', ' + p.reason : '') + ')' : ''));
    }

    /* Each rank's arrival at the collective as the store matched it. */
    function arrivals(m) {
        return el('table', {class: 'grid'},
                  el('thead', {}, el('tr', {}, ['rank', 'enqueued', 'kernel start', 'state'].map(h => el('th', {}, h)))),
                  el('tbody', {}, [...Array(m.nranks).keys()].map(rank => {
                      const r = m.ranks.find(x => x.rank === rank);
                      const state = !r ? 'never arrived' : r.kernel_end_ns === null ? 'inside, not ended' : 'ended';
                      return el('tr', {class: !r ? 'missing' : r.uncertain ? 'uncertain' : null,
                                       title: r && r.uncertain ? 'uncertain: ' + r.uncertain_reason : null},
                                [rank, r ? '+' + fmtNs(r.enqueue_ns - m.start_ns) : '-',
                                 r && r.kernel_start_ns !== null ? '+' + fmtNs(r.kernel_start_ns - m.start_ns) +
                                     (r.kernel_start_err_ns ? ' \u00b1 ' + fmtNs(r.kernel_start_err_ns) : '') : '-', state]
                                    .map(v => el('td', {}, v)));
                  })));
    }

    async function stuckBlock(job, c, procs, g) {
        const res = await NSC.ndjson('collectives', {job, comm: c.comm, func: g.func, seq: g.seq});
        const m = res.items[0] || null;
        const missing = m ? m.missing_ranks : g.behind.map(l => l.rank);
        const longest = Math.max(0, ...g.inside.map(i => i.for_ns));
        const where = c.label + ' (' + c.comm + ', job ' + job + ')';
        const out = [el('h2', {class: 'hung-coll', 'data-func': g.func, 'data-seq': g.seq, 'data-comm': c.comm,
                               'data-missing': missing.join(',')},
                        g.func + ' seq ' + g.seq + ' is hung on ' + where),
                     el('p', {class: 'verdict'},
                        (g.inside.length ? 'ranks ' + g.inside.map(i => i.rank).sort((a, b) => a - b).join(', ') +
                                           ' inside it for ' + fmtNs(longest) : 'no rank inside it') +
                        (missing.length ? '; rank' + (missing.length > 1 ? 's ' : ' ') + missing.join(', ') + ' never arrived.' : '.'),
                        ' ', el('a', {href: link('comm.html', {job, comm: c.comm})}, 'communicator'), ' ',
                        el('a', {href: link('timeline.html', {job, comm: c.comm})}, 'timeline'))];
        if (g.behind.length)
            out.push(el('p', {}, 'waiting for:'), el('ul', {class: 'problems'}, g.behind.map(l =>
                rankLine(c, procs, l.rank, 'its last ' + g.func + ' is seq ' + l.seq + ', behind for ' + fmtNs(l.for_ns) +
                                   (l.since_utc ? ' (since ' + l.since_utc + ')' : '')))));
        out.push(m ? arrivals(m) : el('p', {class: 'note'}, 'not matched in the store yet'));
        return out;
    }

    /* The analysis of diagnose (GET /api/v1/diagnose): its verdict and problems. */
    async function diagnosis(job) {
        const d = await NSC.api('diagnose', {job});
        const ok = !d.problems.length;
        return el('div', {class: 'diagnosis', 'data-job': job},
                  el('p', {class: 'verdict ' + (ok ? 'ok-line' : 'bad'), 'data-kind': ok ? 'ok' : d.problems[0].kind},
                     'diagnose, job ' + job + ': ' + d.verdict),
                  ok ? '' : el('table', {class: 'grid'},
                     el('thead', {}, el('tr', {}, ['kind', 'comm', 'seq', 'rank', 'hosts', 'evidence'].map(h => el('th', {}, h)))),
                     el('tbody', {}, d.problems.map(p => el('tr', {'data-kind': p.kind},
                        [p.kind, p.comm, p.seq, p.rank === null ? '-' : p.rank, p.hosts.join(', ') || '-', p.evidence]
                            .map(v => el('td', {}, v)))))),
                  d.problems_not_shown ? el('p', {class: 'note'}, d.problems_not_shown + ' more not shown') : '');
    }

    async function draw() {
        const s = await NSC.api('status');
        const want = param('job');
        const jobs = (s.jobs || []).filter(j => !want || j.job === want);
        document.getElementById('diagnosis').replaceChildren(...await Promise.all(jobs.map(j => diagnosis(j.job))));
        const blocks = [];
        let hung = 0;
        for (const job of s.jobs || []) {
            for (const c of job.comms)
                for (const g of !want || job.job === want ? c.hung_collectives : []) {
                    hung++;
                    blocks.push(el('div', {class: 'hang-comm'},
                                   await stuckBlock(job.job, c, s.processes || [], g)));
                }
        }
        const box = document.getElementById('hangs');
        box.setAttribute('data-hung', hung);
        box.replaceChildren(...(blocks.length ? blocks : [el('p', {class: 'ok-line'}, 'No hung collective and no lagging rank.')]));
    }

    NSC.start('hang.html', async () => {
        await draw();
        setInterval(() => draw().catch(NSC.fail), REFRESH_MS);
    });
})();
