/* trace.js: timeline events (compact format, docs/api.md) to a Chrome JSON
 * trace, which ui.perfetto.dev and chrome://tracing open. The mapping is that
 * of `ncclscope export --format chrome` (common/export.h): a process per rank
 * (pid rank + 1, named by the header's rank, host, pid and GPU), a thread per
 * lane (event type, and channel where the event has one), overlapping slices
 * of a lane on further threads of the same name; a slice ends at complete_ns,
 * else stop_ns, and one without an end is begun and never ended; every other
 * value becomes an argument, flags by name, and graph_captured is added.
 * Unlike the CLI's export it does not add bytes (the datatype sizes are
 * common/busbw.c's, not repeated here).
 */
'use strict';

const NSCTrace = (() => {
    /* ns as microseconds with three decimals, exact for any integer ns. */
    const us = ns => Math.floor(ns / 1000) + '.' + String(ns % 1000).padStart(3, '0');

    /* A writer: add(header, rows) for each page, then blob(). */
    function writer() {
        const parts = ['{"displayTimeUnit":"ns","traceEvents":[\n'];
        const lanes = new Map();  /* rank|lane -> [{tid, freeAt}] */
        const named = new Set();
        let nextTid = 1, first = true;
        const put = obj => {
            parts.push((first ? '' : ',\n') + JSON.stringify(obj));
            first = false;
        };
        const putRaw = text => {
            parts.push((first ? '' : ',\n') + text);
            first = false;
        };
        function process(rank, title) {
            if (named.has(rank))
                return;
            named.add(rank);
            put({name: 'process_name', ph: 'M', pid: rank + 1, args: {name: title || 'rank ' + rank}});
        }
        function backing(rank, lane, start, end) {
            const key = rank + '|' + lane;
            if (!lanes.has(key))
                lanes.set(key, []);
            const list = lanes.get(key);
            let b = list.find(x => x.freeAt <= start);
            if (!b) {
                b = {tid: nextTid++, freeAt: 0};
                list.push(b);
                put({name: 'thread_name', ph: 'M', pid: rank + 1, tid: b.tid, args: {name: lane}});
            }
            b.freeAt = end === null ? Infinity : end + 1;
            return b.tid;
        }
        function add(header, rows) {
            for (const r of header.ranks || [])
                process(r.rank, 'rank ' + r.rank + (r.host ? ' ' + r.host : '') + (r.pid !== undefined ? ' pid ' + r.pid : '') +
                        (r.gpu >= 0 ? ' gpu ' + r.gpu : ''));
            for (const row of rows) {
                const e = NSCTrace.event(header, row);
                process(e.rank, null);
                const tid = backing(e.rank, e.lane, e.start, e.end);
                const args = {};
                for (const [k, v] of Object.entries(e.fields))
                    if (!['type', 'rank', 'start_ns', e.endField].includes(k))
                        args[k] = v;
                args.graph_captured = Array.isArray(e.fields.flags) && e.fields.flags.includes('graph');
                const head = {name: e.name, cat: e.type, ph: e.end === null ? 'B' : 'X', pid: e.rank + 1, tid};
                /* ts and dur written by hand: exact microseconds, no float rounding */
                const json = JSON.stringify(head).slice(0, -1) + ',"ts":' + us(e.start) +
                             (e.end === null ? '' : ',"dur":' + us(e.end - e.start)) + ',"args":' + JSON.stringify(args) + '}';
                putRaw(json);
            }
        }
        return {add, blob: () => new Blob(parts.concat(['\n]}\n']), {type: 'application/json'})};
    }

    /* One compact row as an event: its fields by name (flags as names), its
     * lane, start and end (null: open). */
    function event(header, row) {
        const cols = header.columns[String(row[0])] || [];
        const fields = {};
        cols.forEach((c, i) => {
            fields[c] = row[i];
        });
        fields.type = header.types[row[0]] || 'event';
        if (typeof fields.flags === 'number')
            fields.flags = header.flag_bits.filter((_, bit) => fields.flags & (1 << bit));
        let endField = fields.complete_ns != null ? 'complete_ns' : fields.stop_ns != null ? 'stop_ns' : null;
        let end = endField ? fields[endField] : null;
        if (end !== null && end < fields.start_ns)
            end = endField = null;  /* kept as an argument; the slice stays open */
        const ch = fields.channel;
        return {type: fields.type, rank: fields.rank, start: fields.start_ns, end, endField, fields,
                name: typeof fields.func === 'string' ? fields.func : fields.type,
                lane: fields.type + (ch !== undefined && ch !== null ? ' ch' + ch : '')};
    }

    return {writer, event};
})();
