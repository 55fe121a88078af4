#!/usr/bin/env python3
"""browser.py: load web pages in headless Chromium and keep what a person saw.

    browser.py OUTDIR NAME=URL [loading:1] [wait:JS] [ACTION:ARG] ...

One Chromium (Debian's package), driven over --remote-debugging-pipe (the
DevTools protocol, no extra library), loads each URL in turn and waits (up to
LOAD_S) until the page says it is ready (<body data-state="ready">) and the
JavaScript expression of wait:, if given, is true. The options after a page
are that page's:
  loading:1    the page's API calls (/api/v1/) are held until its loading
               sign (#loading, collector/ui/common.js) is shown and names
               one, then let go: a page that leaves a person without a word
               while it waits fails;
and its actions, in the order given, once it is ready, as a person would do
them (trusted input events, not scripts):
  point:JS     JS gives [x, y], a point of the viewport; the mouse clicks
               there, then turns the wheel one notch towards the page (zoom
               in);
  click:JS     the mouse clicks at the point [x, y] that JS gives;
  fill:ID=TEXT the text field of id or name ID is emptied and TEXT typed in;
  await:JS     wait (up to LOAD_S) until JS is true;
  download:ID  the element of id ID is clicked and the file the browser
               saves must land in OUTDIR/NAME.download/ within LOAD_S.
Then it writes OUTDIR/NAME.html (the DOM), OUTDIR/NAME.png (a screenshot) and
OUTDIR/NAME.console (every console message, exception and browser log entry,
one a line, 'error' ones first marked ERROR). Exit 0 when every page became
ready with no error logged and its own count of errors (<html data-js-errors
data-api-errors>, collector/ui/common.js) at 0; 1 otherwise, saying which and
why; 2 when Chromium cannot be started.
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

LOAD_S = 60
WIDTH, HEIGHT = 1400, 1000


class Browser:
    def __init__(self, exe, profile):
        r_cmd, w_cmd = os.pipe()   # we write commands, Chromium reads fd 3
        r_evt, w_evt = os.pipe()   # Chromium writes fd 4, we read
        args = [exe, '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                '--disable-background-networking', '--disable-component-update', '--disable-sync',
                '--user-data-dir=' + profile, '--window-size=%d,%d' % (WIDTH, HEIGHT),
                '--hide-scrollbars', '--remote-debugging-pipe', 'about:blank']

        def fds():
            os.dup2(r_cmd, 3)
            os.dup2(w_evt, 4)
        self.proc = subprocess.Popen(args, pass_fds=(3, 4), preexec_fn=fds, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=open(os.path.join(profile, 'stderr'), 'wb'))
        os.close(r_cmd)
        os.close(w_evt)
        self.out, self.inp = os.fdopen(w_cmd, 'wb'), os.fdopen(r_evt, 'rb')
        self.next_id, self.buf, self.events = 0, b'', []

    def _read(self):
        while b'\0' not in self.buf:
            chunk = os.read(self.inp.fileno(), 1 << 20)
            if not chunk:
                raise RuntimeError('chromium closed the DevTools pipe')
            self.buf += chunk
        msg, self.buf = self.buf.split(b'\0', 1)
        return json.loads(msg)

    def call(self, method, session=None, **params):
        self.next_id += 1
        msg = {'id': self.next_id, 'method': method, 'params': params}
        if session:
            msg['sessionId'] = session
        self.out.write(json.dumps(msg).encode() + b'\0')
        self.out.flush()
        while True:
            m = self._read()
            if m.get('id') == self.next_id:
                if 'error' in m:
                    raise RuntimeError('%s: %s' % (method, m['error']))
                return m.get('result', {})
            if 'method' in m:
                self.events.append(m)

    def close(self):
        try:
            self.call('Browser.close')
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def log_lines(events):
    """Console calls, exceptions and log entries as (is_error, text)."""
    out = []
    for e in events:
        m, p = e['method'], e.get('params', {})
        if m == 'Runtime.consoleAPICalled':
            text = ' '.join(str(a.get('value', a.get('description', ''))) for a in p.get('args', []))
            out.append((p.get('type') in ('error', 'assert'), 'console.%s: %s' % (p.get('type'), text)))
        elif m == 'Runtime.exceptionThrown':
            d = p.get('exceptionDetails', {})
            text = d.get('exception', {}).get('description') or d.get('text', '')
            out.append((True, 'uncaught: %s (%s:%s)' % (text, d.get('url', ''), d.get('lineNumber', ''))))
        elif m == 'Log.entryAdded':
            en = p.get('entry', {})
            out.append((en.get('level') == 'error', 'log.%s: %s %s' % (en.get('level'), en.get('text', ''), en.get('url', ''))))
    return out


def download(b, session, ident, where):
    """Click (the mouse, at its middle) element ident; the file it downloads,
    complete, in where."""
    os.makedirs(where, exist_ok=True)
    b.call('Browser.setDownloadBehavior', behavior='allow', downloadPath=where)
    js = ('(r => [r.left + r.width / 2, r.top + r.height / 2])(document.getElementById(%s).getBoundingClientRect())'
          % json.dumps(ident))
    click_at(b, session, *b.call('Runtime.evaluate', session, expression=js, returnByValue=True)['result']['value'])
    began = time.monotonic()
    while time.monotonic() < began + LOAD_S:
        done = [f for f in os.listdir(where) if not f.endswith('.crdownload')]
        if done and not [f for f in os.listdir(where) if f.endswith('.crdownload')]:
            print('  downloaded %s, %d bytes, in %.2f s' % (done[0], os.path.getsize(os.path.join(where, done[0])),
                                                          time.monotonic() - began))
            return []
        b.call('Runtime.evaluate', session, expression='0')  # takes the events that came meanwhile
        time.sleep(0.2)
    return ['clicking #%s downloaded nothing in %d s' % (ident, LOAD_S)]


def click_at(b, session, x, y):
    for kind in ('mouseMoved', 'mousePressed', 'mouseReleased'):
        b.call('Input.dispatchMouseEvent', session, type=kind, x=x, y=y, button='left', clickCount=1)


def where(b, session, js):
    """The viewport point [x, y] JS gives, or None."""
    r = b.call('Runtime.evaluate', session, expression=js, returnByValue=True).get('result', {}).get('value')
    return r if isinstance(r, list) and len(r) == 2 else None


def point(b, session, js):
    """Click at the viewport point JS gives, then zoom in there with the wheel."""
    r = where(b, session, js)
    if not r:
        return ['point: %s gave no [x, y]' % js]
    click_at(b, session, *r)
    b.call('Input.dispatchMouseEvent', session, type='mouseWheel', x=r[0], y=r[1], deltaX=0, deltaY=-120)
    return []


def click(b, session, js):
    r = where(b, session, js)
    if not r:
        return ['click: %s gave no [x, y]' % js]
    click_at(b, session, *r)
    return []


def fill(b, session, arg):
    """Empty the field named by arg's ID and type its TEXT there."""
    ident, _, text = arg.partition('=')
    js = ('(f => { if (!f) return false; f.focus(); f.select(); return true; })'
          '(document.getElementById(%s) || document.querySelector("[name=" + %s + "]"))' % (json.dumps(ident), json.dumps(ident)))
    if not b.call('Runtime.evaluate', session, expression=js, returnByValue=True).get('result', {}).get('value'):
        return ['fill: no field %s' % ident]
    b.call('Input.insertText', session, text=text)
    return []


def hold_until_loading(b, session):
    """Hold the page's API calls until its loading sign shows; let them go."""
    cond = ('(s => !!s && s.classList.contains("on") && getComputedStyle(s).visibility === "visible" && '
            '/^loading \\w/.test(s.textContent))(document.getElementById("loading"))')
    shown = wait_ready(b, session, cond)
    b.call('Fetch.disable', session)
    for e in b.events:
        if e['method'] == 'Fetch.requestPaused':
            try:
                b.call('Fetch.continueRequest', session, requestId=e['params']['requestId'])
            except RuntimeError:
                pass  # let go when the domain was disabled
    return [] if shown else ['no loading sign while its API calls were held (%d s)' % LOAD_S]


def wait_ready(b, session, cond):
    deadline = time.monotonic() + LOAD_S
    while time.monotonic() < deadline:
        r = b.call('Runtime.evaluate', session, expression='!!(%s)' % cond, returnByValue=True)
        if r.get('result', {}).get('value') is True:
            return True
        time.sleep(0.2)
    return False


def load(b, session, url, opts, outdir, name):
    """Load one page, act on it, keep what it shows; its problems and the
    seconds until it was ready."""
    b.events = []
    began = time.monotonic()
    problems = []
    if opts.get('loading'):
        b.call('Fetch.enable', session, patterns=[{'urlPattern': '*/api/v1/*', 'requestStage': 'Request'}])
    b.call('Page.navigate', session, url=url)
    if opts.get('loading'):
        problems += hold_until_loading(b, session)
    cond = 'document.body && document.body.dataset.state === "ready"' + (' && (%s)' % opts['wait'] if 'wait' in opts else '')
    ready = wait_ready(b, session, cond)
    took = time.monotonic() - began
    problems += [] if ready else ['not ready after %d s (waited for: %s)' % (LOAD_S, cond)]
    for act, arg in opts['actions'] if ready else []:
        if act == 'download':
            problems += download(b, session, arg, os.path.join(outdir, name + '.download'))
        elif act == 'await':
            problems += [] if wait_ready(b, session, arg) else ['not true after %d s: %s' % (LOAD_S, arg)]
        else:
            problems += {'point': point, 'click': click, 'fill': fill}[act](b, session, arg)
    dom = b.call('Runtime.evaluate', session, expression='document.documentElement.outerHTML', returnByValue=True)
    with open(os.path.join(outdir, name + '.html'), 'w') as f:
        f.write(dom.get('result', {}).get('value', ''))
    shot = b.call('Page.captureScreenshot', session, format='png', captureBeyondViewport=True)
    with open(os.path.join(outdir, name + '.png'), 'wb') as f:
        f.write(base64.b64decode(shot['data']))
    own = b.call('Runtime.evaluate', session, returnByValue=True,
                 expression='[document.documentElement.dataset.jsErrors, document.documentElement.dataset.apiErrors]')
    js, api = own.get('result', {}).get('value') or [None, None]
    if js != '0' or api != '0':
        problems.append('the page recorded errors: script %s, API %s' % (js, api))
    lines = log_lines(b.events)
    with open(os.path.join(outdir, name + '.console'), 'w') as f:
        for err, text in sorted(lines, key=lambda x: not x[0]):
            f.write(('ERROR ' if err else '') + text + '\n')
    return problems + [t for err, t in lines if err], took


def parse_pages(args):
    """[(name, url, {option: value, 'actions': [(action, arg)]})] from
    NAME=URL items and their options."""
    pages = []
    for a in args:
        key, _, value = a.partition(':')
        if key in ('wait', 'loading') and pages:
            pages[-1][2][key] = value
        elif key in ('point', 'click', 'fill', 'await', 'download') and pages:
            pages[-1][2]['actions'].append((key, value))
        elif '=' in a:
            name, url = a.split('=', 1)
            pages.append((name, url, {'actions': []}))
        else:
            sys.exit('browser.py: %r is neither NAME=URL nor an option of one' % a)
    return pages


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    outdir, pages = sys.argv[1], parse_pages(sys.argv[2:])
    exe = shutil.which('chromium') or shutil.which('chromium-browser')
    if not exe:
        print('browser.py: chromium is not installed (Debian package chromium; scripts/deps.sh --test installs it)',
              file=sys.stderr)
        sys.exit(2)
    os.makedirs(outdir, exist_ok=True)
    profile = tempfile.mkdtemp(prefix='nsc-ui-chromium-')
    b = Browser(exe, profile)
    failed = 0
    try:
        target = next(t for t in b.call('Target.getTargets')['targetInfos'] if t['type'] == 'page')
        session = b.call('Target.attachToTarget', targetId=target['targetId'], flatten=True)['sessionId']
        for domain in ('Page', 'Runtime', 'Log'):
            b.call(domain + '.enable', session)
        for name, url, opts in pages:
            problems, took = load(b, session, url, opts, outdir, name)
            print('%s: %s (ready in %.2f s)' % (name, 'ok' if not problems else 'FAILED', took))
            for p in problems:
                print('  ' + p)
            failed += bool(problems)
    except (RuntimeError, OSError, StopIteration) as e:
        print('browser.py: %s' % e, file=sys.stderr)
        sys.exit(2)
    finally:
        b.close()
        shutil.rmtree(profile, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
