/* links.js: links and hosts (links.html?job=J&comm=C): the network links of
 * a communicator as diagnose judges them (/api/v1/links: per sender rank,
 * receiver rank and channel, the typical step, GB/s and ratio to the
 * reference, slow ones marked), and the fleet view (/api/v1/hosts: per host,
 * the causes diagnose placed there across the collector's jobs), worst first.
 */
'use strict';

(() => {
    const {el, param, fmtNs, fmtNum} = NSC;

    function table(heads, rows) {
        return el('table', {class: 'grid'}, el('thead', {}, el('tr', {}, heads.map(h => el('th', {}, h)))),
                  el('tbody', {}, rows));
    }

    async function links() {
        const d = await NSC.api('links', {job: param('job'), comm: param('comm')});
        document.getElementById('title').textContent = 'Network links of ' + d.comm;
        document.getElementById('reference').textContent = 'reference step ' + fmtNs(d.reference_step_ns) +
            '; a link is slow from ' + fmtNs(d.slow_step_ns) + ' a step';
        const box = document.getElementById('links');
        box.setAttribute('data-links', d.links.length);
        box.setAttribute('data-slow', d.links.filter(k => k.state === 'SLOW').length);
        box.replaceChildren(d.links.length ? table(['from', 'to', 'channel', 'steps', 'step', 'GB/s', 'x ref', 'state'],
            d.links.map(k => el('tr', {class: k.state === 'SLOW' ? 'bad' : null, 'data-state': k.state},
                [k.from_rank + ' (' + k.from_host + ')', k.to_rank + ' (' + k.to_host + ')', k.channel, k.steps,
                 fmtNs(k.step_ns), fmtNum(k.gbps, 3), fmtNum(k.ratio, 3), k.state].map(v => el('td', {}, v)))))
            : el('p', {class: 'note'}, 'No network step seen (links between hosts only; intra-node links have no proxy events).'));
    }

    async function hosts() {
        const d = await NSC.api('hosts');
        const causes = ['late', 'slow_link', 'slow_nic', 'stall', 'dead', 'dropped', 'other'];
        const rows = d.hosts.slice().sort((a, b) => b.total - a.total || a.host.localeCompare(b.host));
        document.getElementById('hosts').replaceChildren(
            el('p', {class: 'note'}, d.jobs + (d.jobs === 1 ? ' job' : ' jobs') + ' analysed'),
            table(['host'].concat(causes, ['total']), rows.map(h => el('tr', {class: h.total ? 'bad' : null, 'data-host': h.host},
                [h.host].concat(causes.map(c => h[c]), [h.total]).map(v => el('td', {}, v))))));
    }

    NSC.start('links.html', async () => {
        await Promise.all([links(), hosts()]);
    });
})();
