// The operator console: sign in with the operator token, see every show in one table, open
// one show's detail (live figures, chart, fair start, every setting), open, pause, close, end
// or delete on-sales after a confirmation, read or save an on-sale's report, and look a ticket
// up for support.
//
// The token is kept in sessionStorage (this tab only, gone when it closes) and sent as a
// bearer header on every call; the server has no session. The live feed is an SSE stream
// read with fetch(), because EventSource cannot send an Authorization header.
(() => {
  'use strict';

  const TOKEN_KEY = 'waiting-room:operator-token';
  const WATCH_KEY = 'waiting-room:watched';
  const SELECTED_KEY = 'waiting-room:selected';
  const HISTORY_MS = 5 * 60 * 1000;
  // Without a sample for this long, the figures on screen are called stale.
  const STALE_MS = 3500;
  const SHOW_ID = /^[A-Za-z0-9._-]{1,64}$/;

  const $ = (id) => document.getElementById(id);
  const els = {
    login: $('login'), loginForm: $('login-form'), token: $('token'), loginError: $('login-error'),
    loginButton: $('login-button'), console: $('console'), session: $('session'), logout: $('logout'),
    conn: $('conn'), connText: $('conn-text'), watchForm: $('watch-form'), watchShow: $('watch-show'),
    watchError: $('watch-error'), shows: $('shows'), noShows: $('no-shows'), template: $('show-card'),
    table: $('show-table'), rows: $('show-rows'), rowTemplate: $('show-row'),
    lookupForm: $('lookup-form'), lookupTicket: $('lookup-ticket'), lookupResult: $('lookup-result'),
    dialog: $('confirm-dialog'), confirmText: $('confirm-text'), confirmReason: $('confirm-reason'),
    confirmReasonLabel: $('confirm-reason-label'), confirmOk: $('confirm-ok'),
  };

  // Every path comes from the server's contract (protocol.rs), through the page.
  const routes = document.getElementById('routes').dataset;
  const PHASE_WORDS = { pending: 'Not open yet', open: 'Open', paused: 'Paused', closed: 'Closed: no gate', ended: 'Ended' };
  const PHASE_DONE = {
    open: 'On-sale opened: the admitter lets fans through from the next tick.',
    pause: 'Paused: nobody is admitted, every place is kept and the gate stays shut. Open resumes.',
    close: 'Gate lifted: no more admissions, orders need no ticket, waiting fans were sent on.',
    end: 'On-sale ended: joins are refused, every waiting fan was told, the gate stays shut.',
    delete: 'Show deleted: its queue and settings are gone; orders placed stay readable.',
  };
  const DRAW_WORDS = { scheduled: 'Pre-queue taking fans', closed: 'Pre-queue closed: waiting for the beacon', drawn: 'Drawn' };
  const route = (name, show) => routes[`route${name}`].replace('{show_id}', encodeURIComponent(show || ''));

  const storage = {
    get(key) { try { return sessionStorage.getItem(key); } catch { return null; } },
    set(key, value) { try { sessionStorage.setItem(key, value); } catch { /* tab-only anyway */ } },
    remove(key) { try { sessionStorage.removeItem(key); } catch { /* nothing kept */ } },
  };

  let token = storage.get(TOKEN_KEY);
  let watched = new Set(readWatched());
  const history = new Map(); // show -> [{ at, queue, admitted }]
  const cards = new Map();   // show -> { el, row, stats }
  let selected = storage.get(SELECTED_KEY);
  let clockOffset = 0;       // the server's clock less this browser's, from the samples
  let stream = null;         // AbortController of the running feed
  let streamShows = new Set();
  let retryTimer = 0;
  let retryDelay = 1000;
  let lastSampleAt = 0;

  function readWatched() {
    try {
      const list = JSON.parse(storage.get(WATCH_KEY) || '[]');
      return Array.isArray(list) ? list.filter((s) => SHOW_ID.test(s)) : [];
    } catch {
      return [];
    }
  }

  function saveWatched() {
    storage.set(WATCH_KEY, JSON.stringify([...watched].sort()));
  }

  const fmt = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US'));

  // The fan page's wording of a wait (wait.js `etaWords`).
  function etaWords(s) {
    if (s <= 0) return 'none';
    if (s < 60) return '< 1 min';
    const minutes = Math.floor((s + 30) / 60);
    if (minutes < 60) return `~${minutes} min`;
    const hours = Math.floor(minutes / 60);
    return `~${hours} h ${minutes % 60} min`;
  }

  // ---- the settings form, from the settings schema -------------------------------------------
  //
  // The form has a field per property of the show's settings schema in the server's OpenAPI
  // document (the one type the server checks the settings with, keeps and answers in the
  // stats), in the order the type declares them: the label is the property's title, or its
  // name in words; its description is the help beside the input; its type, format, enum and
  // bounds choose the input and check what is typed. A setting added to the type shows here,
  // filled from the stats and saved, with nothing written for it in this page.

  // What no schema says, for the few settings that are more than a value. Where the form reads
  // them when not from the stats: the fair start lives with the show's draw; a rate change and
  // a beacon's value are given, never shown back (once in force they would only go stale; the
  // announced change has its sentence and its withdraw button).
  const SHOWN_FROM = {
    opensAt: (s) => (s.draw ? s.draw.opensAtMs : undefined),
    drawBeacon: (s) => (s.draw ? s.draw.beacon : undefined),
    drawBeaconValue: () => undefined,
    rateChangeAt: () => undefined,
    rateChangeTo: () => undefined,
  };
  // Settings sent together when either is edited: a rate change is its time and its rate.
  const TOGETHER = [['rateChangeAt', 'rateChangeTo']];

  let settingFields = null; // the fields, once the document is read
  const openapi = fetch(routes.routeOpenapi, { headers: { Accept: 'application/json' } })
    .then((res) => {
      if (!res.ok) throw new Error(`the server answered ${res.status}`);
      return res.json();
    });
  const settingsSchema = openapi.then((doc) => {
    settingFields = fieldsOf(doc, routes.settingsSchema);
    return settingFields;
  });
  // A failure is said on each card.
  settingsSchema.catch(() => {});

  // The fields of the object schema `name` among the document's components.
  function fieldsOf(doc, name) {
    const schemas = (doc.components && doc.components.schemas) || {};
    const resolve = (schema) => {
      let s = schema || {};
      for (let hops = 0; s.$ref && hops < 8; hops++) {
        s = schemas[s.$ref.replace('#/components/schemas/', '')] || {};
      }
      return s;
    };
    const settings = resolve(schemas[name]);
    if (!settings.properties) throw new Error(`the document has no ${name}`);
    return Object.entries(settings.properties).map(([key, prop]) => field(key, prop, resolve));
  }

  // One setting's field: its label, help and input kind, and each kind of value it takes
  // (`alts`; `null`, "leave it as it is", is not one a form sends) with its bounds.
  function field(name, prop, resolve) {
    const top = resolve(prop);
    const alts = [];
    for (const one of (top.anyOf || top.oneOf || [top]).map(resolve)) {
      const enumType = Array.isArray(one.enum) ? typeof one.enum.find((v) => v !== null) : [];
      for (const type of [].concat(one.type ?? enumType)) {
        if (type !== 'null') alts.push(Object.assign({}, one, { type }));
      }
    }
    const f = {
      name,
      label: prop.title || top.title || alts.map((a) => a.title).find(Boolean) || words(name),
      help: prop.description || top.description || '',
      alts,
      example: [top, ...alts].map((a) => (a.examples ? a.examples[0] : a.example)).find((e) => e !== undefined),
    };
    const numbers = alts.filter((a) => a.type === 'integer' || a.type === 'number');
    if (alts.some((a) => Array.isArray(a.enum))) {
      f.kind = 'select';
      f.options = [...new Set(alts.flatMap((a) => a.enum || []).filter((v) => v !== null))];
    } else if (numbers.length) {
      f.kind = 'number';
      f.ranges = numbers.map((a) => ({
        integer: a.type === 'integer',
        low: a.minimum ?? a.exclusiveMinimum ?? -Infinity,
        lowOpen: a.minimum === undefined && a.exclusiveMinimum !== undefined,
        high: a.maximum ?? a.exclusiveMaximum ?? Infinity,
        highOpen: a.maximum === undefined && a.exclusiveMaximum !== undefined,
      }));
    } else if (alts.some((a) => a.type === 'boolean')) {
      f.kind = 'checkbox';
    } else if (alts.some((a) => a.type === 'array' || a.type === 'object')) {
      // A list (the schedule's events, the push services) is edited as JSON.
      f.kind = 'json';
    } else if (alts.some((a) => a.format === 'date-time')) {
      f.kind = 'datetime-local';
    } else {
      f.kind = alts.some((a) => a.format === 'uri') ? 'url' : 'text';
    }
    return f;
  }

  // A camelCase name in words: "maxQueueLength" is "Max queue length".
  function words(name) {
    const spaced = name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase()
      .replace(/\b(url|id|eta)\b/g, (w) => w.toUpperCase());
    return spaced.charAt(0).toUpperCase() + spaced.slice(1);
  }

  let fieldCount = 0;

  // Fills the form's grid with a labelled input per setting, its help bound to it.
  function buildSettings(form, fields) {
    const grid = form.querySelector('.settings-grid');
    if (grid.childElementCount) return;
    for (const f of fields) {
      const id = `setting-${++fieldCount}`;
      const box = document.createElement('div');
      box.className = `setting setting-${f.kind}`;
      if (f.kind === 'url' || f.kind === 'json') box.classList.add('wide');
      const label = document.createElement('label');
      label.htmlFor = id;
      label.textContent = f.label;
      const tag = { select: 'select', json: 'textarea' }[f.kind] || 'input';
      const input = document.createElement(tag);
      input.id = id;
      input.name = f.name;
      if (f.kind === 'select') {
        for (const value of ['', ...f.options]) {
          const option = document.createElement('option');
          option.value = String(value);
          option.textContent = value === '' ? '–' : String(value);
          input.appendChild(option);
        }
      } else if (f.kind === 'json') {
        input.rows = 2;
        input.spellcheck = false;
      } else {
        input.type = f.kind;
      }
      if (f.kind === 'number') {
        const lows = f.ranges.map((r) => r.low);
        const highs = f.ranges.map((r) => r.high);
        if (lows.every(Number.isFinite)) input.min = String(Math.min(...lows));
        if (highs.every(Number.isFinite)) input.max = String(Math.max(...highs));
        input.step = f.ranges.every((r) => r.integer) ? '1' : 'any';
      } else if (f.kind === 'datetime-local') {
        input.step = '1';
      } else if (f.kind === 'text' || f.kind === 'url') {
        const most = Math.max(...f.alts.map((a) => a.maxLength ?? Infinity));
        if (Number.isFinite(most)) input.maxLength = most;
        if (f.example !== undefined) input.placeholder = String(f.example);
        input.spellcheck = false;
        input.autocomplete = 'off';
      }
      // What it shows as built (a checkbox: unchecked) is no edit of the operator's.
      input.dataset.shown = valueOf(input);
      box.append(label, input);
      if (f.help) {
        const help = document.createElement('small');
        help.className = 'setting-help';
        help.id = `${id}-help`;
        helpText(help, f.help);
        input.setAttribute('aria-describedby', help.id);
        box.appendChild(help);
      }
      grid.appendChild(box);
    }
  }

  // A description as text, its `quoted` words as code: never read as HTML.
  function helpText(el, text) {
    text.split('`').forEach((part, i) => {
      if (i % 2) {
        const code = document.createElement('code');
        code.textContent = part;
        el.appendChild(code);
      } else {
        el.appendChild(document.createTextNode(part));
      }
    });
  }

  // ---- signing in and out ------------------------------------------------------------------

  function showLogin(message) {
    stopStream();
    token = null;
    storage.remove(TOKEN_KEY);
    els.console.hidden = true;
    els.session.hidden = true;
    els.login.hidden = false;
    els.loginError.hidden = !message;
    els.loginError.textContent = message || '';
    els.loginButton.disabled = false;
    els.token.focus();
  }

  function showConsole() {
    els.login.hidden = true;
    els.console.hidden = false;
    els.session.hidden = false;
  }

  els.loginForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const value = els.token.value.trim();
    if (!value) return;
    token = value;
    els.loginButton.disabled = true;
    els.loginError.hidden = true;
    connect(true);
  });

  els.logout.addEventListener('click', () => {
    els.token.value = '';
    showLogin('Signed out.');
  });

  // Every API call: bearer header, and a refused token sends the operator back to sign-in.
  // `accept`: what the answer is when it is no refusal; `signal`: to give the call up.
  async function call(method, path, body, { accept = 'application/json', signal } = {}) {
    const res = await fetch(path, {
      method,
      headers: Object.assign(
        { Authorization: `Bearer ${token}`, Accept: accept },
        body ? { 'Content-Type': 'application/json' } : {},
      ),
      body: body ? JSON.stringify(body) : undefined,
      signal,
    });
    if (res.status === 401) {
      showLogin('The token was refused. Sign in again.');
      throw new Error('unauthorised');
    }
    return res;
  }

  // ---- the live feed -----------------------------------------------------------------------

  function setConn(kind, text) {
    els.conn.dataset.conn = kind;
    els.connText.textContent = text;
  }

  function stopStream() {
    clearTimeout(retryTimer);
    if (stream) stream.abort();
    stream = null;
  }

  async function connect(signingIn) {
    stopStream();
    const controller = new AbortController();
    stream = controller;
    streamShows = new Set(watched);
    setConn('connecting', 'Connecting…');
    const query = encodeURIComponent([...streamShows].sort().join(','));
    let res;
    try {
      res = await fetch(`${route('Feed')}?shows=${query}`, {
        headers: { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' },
        cache: 'no-store',
        signal: controller.signal,
      });
    } catch {
      if (controller.signal.aborted) return;
      if (signingIn) {
        els.loginButton.disabled = false;
        els.loginError.textContent = 'The server could not be reached.';
        els.loginError.hidden = false;
        return;
      }
      return retryLater();
    }
    if (res.status === 401) {
      showLogin(signingIn ? 'That token was refused.' : 'The token was refused. Sign in again.');
      return;
    }
    if (!res.ok || !res.body) {
      if (signingIn) {
        els.loginButton.disabled = false;
        els.loginError.textContent = `The server answered ${res.status}.`;
        els.loginError.hidden = false;
        return;
      }
      return retryLater();
    }
    storage.set(TOKEN_KEY, token);
    showConsole();
    await read(res.body, controller);
    if (!controller.signal.aborted) retryLater();
  }

  function retryLater() {
    setConn('reconnecting', 'Feed lost. Reconnecting…');
    clearTimeout(retryTimer);
    retryTimer = setTimeout(() => connect(false), retryDelay);
    retryDelay = Math.min(retryDelay * 2, 10000);
  }

  // A minimal SSE reader: events are separated by a blank line; `event:` names them and
  // `data:` lines carry the JSON. Comments (keep-alives) start with a colon.
  async function read(body, controller) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer = (buffer + value).replace(/\r\n?/g, '\n');
        const blocks = buffer.split('\n\n');
        buffer = blocks.pop();
        for (const block of blocks) {
          let name = 'message';
          const data = [];
          for (const line of block.split('\n')) {
            if (!line || line.startsWith(':')) continue;
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'event') name = text;
            if (field === 'data') data.push(text);
          }
          if (name === 'stats' && data.length) {
            try { onSample(JSON.parse(data.join('\n'))); } catch (e) { console.error('bad sample', e); }
          }
        }
      }
    } catch {
      // Aborted on purpose, or the connection dropped: the caller decides.
    } finally {
      if (controller.signal.aborted) reader.cancel().catch(() => {});
    }
  }

  setInterval(() => {
    if (stream && lastSampleAt && Date.now() - lastSampleAt > STALE_MS) {
      const ago = Math.round((Date.now() - lastSampleAt) / 1000);
      setConn('reconnecting', `No figures for ${ago} s…`);
    }
  }, 1000);

  function onSample(sample) {
    lastSampleAt = Date.now();
    clockOffset = sample.at - lastSampleAt;
    retryDelay = 1000;
    setConn('live', 'Live');
    let newShows = false;
    for (const s of sample.shows) {
      if (!watched.has(s.showId)) {
        // An on-sale opened elsewhere: keep it on screen even after it closes.
        watched.add(s.showId);
        newShows = true;
      }
      const points = history.get(s.showId) || [];
      points.push({
        at: sample.at, queue: s.queueLength, admitted: s.admittedSinceLast,
        rate: s.effectiveAdmitPerSecond ?? s.admitPerSecond,
      });
      while (points.length && sample.at - points[0].at > HISTORY_MS) points.shift();
      history.set(s.showId, points);
      updateCard(Object.assign({ draw: null, rateChange: null, checkoutHealthUrl: '' }, s));
    }
    if (newShows) {
      saveWatched();
      // Name it in the feed too, so it stays reported once closed.
      connect(false);
    }
    render();
  }

  // ---- the summary table and the show cards ---------------------------------------------
  //
  // Every show has a row in the table and a card; only the selected show's card is shown,
  // so five shows are five rows, not a 4,000-pixel column.

  function render() {
    const names = [...cards.keys()].sort();
    els.noShows.hidden = names.length > 0;
    els.table.hidden = names.length === 0;
    if (!cards.has(selected)) selected = names[0] || null;
    names.forEach((name, i) => {
      const c = cards.get(name);
      // Moving a node takes the focus from whatever inside it has it: only what is out of
      // place moves, or every sample would take the field an operator is typing in (and the
      // rest of what they type would go nowhere).
      if (els.rows.children[i] !== c.row) els.rows.insertBefore(c.row, els.rows.children[i] || null);
      if (els.shows.children[i] !== c.el) els.shows.insertBefore(c.el, els.shows.children[i] || null);
      const on = name === selected;
      const wasHidden = c.el.hidden;
      c.el.hidden = !on;
      c.row.classList.toggle('selected', on);
      if (on) c.row.setAttribute('aria-current', 'true'); else c.row.removeAttribute('aria-current');
      // A card drawn while hidden has no width: draw it again once it shows.
      if (on && wasHidden) drawChart(name);
    });
  }

  function select(show, scroll) {
    selected = show;
    storage.set(SELECTED_KEY, show);
    render();
    if (scroll) cards.get(show).el.scrollIntoView({ block: 'start' });
  }

  function card(show) {
    let c = cards.get(show);
    if (c) return c;
    const el = els.template.content.firstElementChild.cloneNode(true);
    el.dataset.show = show;
    el.hidden = true;
    el.querySelector('.show-title').textContent = show;
    el.querySelector('.show-page').href = route('Page', show);
    el.querySelector('.draw-link').href = route('Draw', show);
    for (const action of ['open', 'pause', 'close', 'end', 'delete']) {
      el.querySelector(`[data-action="${action}"]`).addEventListener('click', () => changePhase(show, action));
    }
    for (const button of el.querySelectorAll('[data-report]')) {
      const format = button.dataset.report;
      button.addEventListener('click', () => (format === 'html' ? openReport(show, button) : saveReport(show, format, button)));
    }
    const form = el.querySelector('.settings-form');
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      saveSettings(show, form);
    });
    settingsSchema.then((fields) => {
      buildSettings(form, fields);
      if (c.stats) updateSettings(c);
    }, (e) => message(show, `The settings form could not be built (${e.message}): reload the page.`, true));
    form.querySelector('.withdraw').addEventListener('click', () => send(show, { rateChangeAt: '' }, 'Rate change withdrawn: every estimate counts with the rate in force.'));
    // Codes from a CSV file, sent as it is: the server reads it line by line and says what
    // it added and which lines it refused (never the codes).
    const file = el.querySelector('.codes-file');
    file.addEventListener('change', async () => {
      const chosen = file.files[0];
      if (!chosen) return;
      const report = el.querySelector('.codes-report');
      report.textContent = 'Sending…';
      try {
        const res = await fetch(route('Codes', show), {
          method: 'POST',
          headers: { Authorization: `Bearer ${token}`, Accept: 'application/json', 'Content-Type': 'text/csv' },
          body: chosen,
        });
        const j = await res.json().catch(() => ({}));
        report.textContent = res.ok
          ? `${fmt(j.added)} added, ${fmt(j.alreadyHeld)} held already, ${fmt(j.refusedCount)} lines refused${j.refused && j.refused.length ? ` (first: line ${j.refused[0].line}, ${j.refused[0].why})` : ''}.`
          : (j.message || `Refused (${res.status}).`);
        c.codesAt = 0;
        if (c.stats) updateLanes(c);
      } catch (e) {
        report.textContent = `Not sent: ${e.message}`;
      }
      file.value = '';
    });
    const unwatch = document.createElement('button');
    unwatch.type = 'button';
    unwatch.className = 'link-button unwatch';
    unwatch.textContent = 'Stop watching';
    unwatch.addEventListener('click', () => forget(show));
    el.appendChild(unwatch);

    const row = els.rowTemplate.content.firstElementChild.cloneNode(true);
    row.dataset.row = show;
    const name = row.querySelector('.row-name');
    name.textContent = show;
    name.addEventListener('click', () => select(show, false));
    row.querySelector('.row-details').addEventListener('click', () => select(show, true));
    c = { el, row, stats: null, page: pageEditor(show, el) };
    cards.set(show, c);
    return c;
  }

  function forget(show) {
    const c = cards.get(show);
    watched.delete(show);
    saveWatched();
    cards.delete(show);
    history.delete(show);
    if (c) { c.el.remove(); c.row.remove(); }
    render();
    connect(false);
  }

  const duration = (ms) => {
    const s = Math.max(0, Math.ceil(ms / 1000));
    const d = Math.floor(s / 86400);
    const h = Math.floor((s % 86400) / 3600);
    const m = Math.floor((s % 3600) / 60);
    const pad = (n) => String(n).padStart(2, '0');
    return d ? `${d} d ${h} h ${pad(m)} min` : `${h ? `${h}:${pad(m)}` : m}:${pad(s % 60)}`;
  };
  const serverNow = () => Date.now() + clockOffset;
  // An <input type="datetime-local"> value (local time) and back.
  const localInput = (ms) => {
    const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60000);
    return d.toISOString().slice(0, 19);
  };

  function phaseWords(s) {
    const phase = s.phase || (s.open ? 'open' : 'pending');
    if (s.lost) return 'Lost: re-open to start again';
    if (phase === 'pending' && s.draw && s.draw.state === 'scheduled') return 'Scheduled';
    return PHASE_WORDS[phase] + (phase === 'ended' && s.reason ? `: ${s.reason}` : '');
  }

  function setBadge(badge, s) {
    badge.textContent = phaseWords(s);
    badge.classList.toggle('open', s.open && !s.lost);
    badge.classList.toggle('lost', Boolean(s.lost));
  }

  function updateCard(stats) {
    const c = card(stats.showId);
    c.stats = Object.assign({}, c.stats, stats);
    const s = c.stats;
    const el = c.el;
    el.dataset.open = String(s.open);
    // A lost show: the store forgot its queue (Redis restarted empty). Everything about it is
    // refused until the operator re-opens it, deliberately, from nothing.
    const phase = s.phase || (s.open ? 'open' : 'pending');
    setBadge(el.querySelector('.badge'), s);
    el.dataset.lost = String(Boolean(s.lost));
    for (const dd of el.querySelectorAll('[data-figure]')) {
      const key = dd.dataset.figure;
      if (key === 'backEta') {
        // The wait at the back, at the pace really measured (as the fans' ETAs are).
        const pace = Math.max(0.02, s.outflowPerSecond ?? s.admitPerSecond ?? 1);
        dd.textContent = s.queueLength === undefined ? '–' : etaWords(Math.ceil(s.queueLength / pace));
      } else if (key === 'pausedWords') {
        dd.textContent = s.paused === 'full' ? 'every place taken' : s.paused === 'paused' ? 'paused' : s.paused === 'pending' ? 'not open yet' : '';
      } else if (key === 'stockWords') {
        dd.textContent = typeof s.stock === 'number' ? `${fmt(s.stockLeft ?? s.stock)} of ${fmt(s.stock)}` : 'no stock set';
      } else if (key === 'presenceWords') {
        // Fans holding a place with no live page (docs/presence.md), those of them passed over,
        // places released after the hold, and fans who asked to be called.
        const p = s.presence;
        dd.textContent = p ? `${fmt(p.away)} (${fmt(p.passedOver)} passed over; ${fmt(p.released)} released; ${fmt(p.askedToBeCalled)} to call)` : '–';
      } else if (key === 'fansEverywhere') {
        // Every instance's count; this instance's own while the store cannot say.
        dd.textContent = fmt(s.fansEverywhere ?? s.connectedFans);
      } else if (key === 'fansHere') {
        dd.textContent = typeof s.connectedFans === 'number' ? `(${fmt(s.connectedFans)} here)` : '';
      } else if (key === 'outflowPerSecond' && typeof s[key] === 'number') {
        dd.textContent = s[key].toFixed(1);
      } else if (key in s) {
        dd.textContent = fmt(s[key]);
      }
    }
    el.querySelector('[data-action="open"]').disabled = s.open && !s.lost;
    el.querySelector('[data-action="pause"]').disabled = s.lost || !(phase === 'open' || phase === 'closed');
    el.querySelector('[data-action="close"]').disabled = s.lost || phase === 'closed';
    el.querySelector('[data-action="end"]').disabled = s.lost || phase === 'ended';
    updateSchedule(c);
    updateLanes(c);
    updateTimeline(c);
    updateSettings(c);
    updateRow(c);
    if (!el.hidden) drawChart(stats.showId);
  }

  function updateRow(c) {
    const s = c.stats;
    const row = c.row;
    setBadge(row.querySelector('.badge'), s);
    const cell = (name, text) => { row.querySelector(`[data-cell="${name}"]`).textContent = text; };
    cell('queueLength', fmt(s.queueLength));
    cell('admittedValid', fmt(s.admittedValid));
    const force = s.effectiveAdmitPerSecond ?? s.admitPerSecond;
    cell('rate', force !== undefined && force !== s.admitPerSecond ? `${fmt(force)} of ${fmt(s.admitPerSecond)}/s` : `${fmt(s.admitPerSecond)}/s`);
    cell('seats', typeof s.stock === 'number' ? fmt(s.stockLeft ?? s.stock) : '–');
    cell('fans', fmt(s.fansEverywhere ?? s.connectedFans));
    row.querySelector('.row-when').textContent = s.draw && s.draw.state === 'scheduled'
      ? `opens in ${duration(s.draw.opensAtMs - serverNow())}` : '';
  }

  function updateSchedule(c) {
    const s = c.stats;
    const box = c.el.querySelector('.schedule');
    box.hidden = !s.draw;
    if (!s.draw) return;
    const d = s.draw;
    const put = (key, text) => { box.querySelector(`[data-draw="${key}"]`).textContent = text; };
    put('countdown', d.state === 'scheduled' ? duration(d.opensAtMs - serverNow()) : 'due: opening');
    put('opensAt', new Date(d.opensAtMs).toLocaleString('en-GB'));
    put('preQueue', `${fmt(d.preQueue)} fan${d.preQueue === 1 ? '' : 's'}`);
    put('state', DRAW_WORDS[d.state] || d.state);
    const commitment = box.querySelector('[data-draw="commitment"]');
    commitment.textContent = `${d.commitment.slice(0, 16)}…`;
    commitment.title = d.commitment;
    put('beacon', d.beacon ? `· beacon: ${d.beacon}` : '· no beacon');
  }

  // The show's lanes (docs/lanes.md): how each is served, who waits in it, and its codes
  // (read from the codes route now and then: the feed carries the stats only).
  function updateLanes(c) {
    const s = c.stats;
    const listed = (s.settings && s.settings.lanes) || [];
    const lanes = s.lanes && s.lanes.length ? s.lanes : listed.map((l) => Object.assign({ waiting: 0 }, l));
    const box = c.el.querySelector('.lanes');
    box.hidden = lanes.length === 0 && !c.codes;
    if (box.hidden) return;
    if (!c.codesAt || Date.now() - c.codesAt > 5000) {
      c.codesAt = Date.now();
      call('GET', route('Codes', s.showId)).then((r) => (r.ok ? r.json() : null)).then((j) => {
        if (!j) return;
        c.codes = j.lanes;
        updateLanes(c);
      }).catch(() => {});
    }
    const codes = new Map((c.codes || []).map((l) => [l.lane, l]));
    const body = box.querySelector('tbody');
    body.replaceChildren();
    const names = new Set();
    const row = (name, served, waiting) => {
      names.add(name);
      const tr = document.createElement('tr');
      tr.dataset.lane = name;
      const code = codes.get(name);
      for (const text of [name, served, waiting === undefined ? '–' : fmt(waiting),
        code ? fmt(code.codes) : '–', code ? fmt(code.usesLeft) : '–']) {
        const td = document.createElement('td');
        td.textContent = text;
        tr.appendChild(td);
      }
      body.appendChild(tr);
    };
    for (const l of lanes) {
      row(l.name, l.priority ? 'first' : `${l.share} % of the rate`, l.waiting);
    }
    // Codes for lanes the show does not list now: refused at a join until it does.
    for (const [name] of codes) {
      if (!names.has(name)) row(name, 'not listed: its codes are refused', undefined);
    }
  }

  // The show's schedule of events (docs/events.md) as a timeline: each event's time, what it
  // sets, and where it stands (running, done, or how long until it starts).
  function updateTimeline(c) {
    const s = c.stats;
    const box = c.el.querySelector('.timeline');
    const events = (s.settings && s.settings.events) || [];
    box.hidden = events.length === 0;
    const list = box.querySelector('.events');
    list.replaceChildren();
    const now = serverNow();
    const time = (t) => new Date(t).toLocaleString('en-GB', { dateStyle: 'short', timeStyle: 'short' });
    events.forEach((e, i) => {
      const starts = Date.parse(e.startsAt);
      const ends = e.endsAt ? Date.parse(e.endsAt) : (events[i + 1] ? Date.parse(events[i + 1].startsAt) : null);
      const running = s.runningEvent === i + 1;
      const state = running ? 'running' : (ends !== null && ends <= now) ? 'done' : starts > now ? 'upcoming' : 'due';
      const li = document.createElement('li');
      li.className = `event event-${state}`;
      li.dataset.event = String(i + 1);
      const name = document.createElement('strong');
      name.textContent = e.name || `Event ${i + 1}`;
      const when = document.createElement('span');
      when.className = 'event-when';
      when.textContent = ` ${time(starts)} → ${ends === null ? 'for good' : time(ends)}`;
      const what = document.createElement('span');
      what.className = 'event-sets';
      const setting = ([k, v]) => {
        if (k === 'lanes') {
          return v.length ? `lanes ${v.map((l) => `${l.name} (${l.priority ? 'first' : `${l.share} %`})`).join(', ')}` : 'no lanes';
        }
        if (k === 'codesOnly') return v ? 'codes only' : 'open to all';
        return `${words(k).toLowerCase()} ${fmt(v)}`;
      };
      const sets = Object.entries(e.settings || {}).map(setting);
      const phaseWords = { open: 'opens the sale', paused: 'pauses the sale', ended: 'ends the sale' };
      if (e.phase) sets.unshift(phaseWords[e.phase] || e.phase);
      what.textContent = ` · ${sets.length ? sets.join(', ') : 'the show\'s own settings'}`;
      const tag = document.createElement('span');
      tag.className = 'event-state';
      tag.textContent = state === 'upcoming' ? `in ${duration(starts - now)}` : state;
      li.append(name, when, what, document.createTextNode(' '), tag);
      list.appendChild(li);
    });
  }

  // A field the operator changed: it no longer holds what the server last said (kept in
  // data-shown), so the feed leaves it alone and saving sends it. Comparing values rather
  // than listening for keys also counts a field emptied, pasted into or filled by a tool.
  const valueOf = (input) => (input.type === 'checkbox' ? String(input.checked) : input.value);
  const edited = (input) => valueOf(input) !== (input.dataset.shown ?? '');

  // The settings form shows what is in force, except in the fields being edited.
  function updateSettings(c) {
    const s = c.stats;
    const form = c.el.querySelector('.settings-form');
    for (const f of settingFields || []) {
      const input = form.elements[f.name];
      if (!input || edited(input) || document.activeElement === input) continue;
      const value = f.name in SHOWN_FROM ? SHOWN_FROM[f.name](s) : shownValue(s, f.name);
      if (input.type === 'checkbox') {
        input.checked = value === true;
      } else if (value === undefined || value === null) {
        input.value = '';
      } else if (f.kind === 'json') {
        input.value = JSON.stringify(value);
      } else if (f.kind === 'datetime-local') {
        const ms = typeof value === 'number' ? value : Date.parse(value);
        input.value = Number.isNaN(ms) ? '' : localInput(ms);
      } else {
        input.value = String(value);
      }
      input.dataset.shown = valueOf(input);
    }
    const announced = form.querySelector('.announced');
    const change = s.rateChange;
    // The change ahead is the operator's own (which may be withdrawn) or the schedule's (a
    // start or an end of an event, which only the schedule changes).
    // It is the operator's when it falls when the operator's does (to the second).
    const ownAt = s.settings && s.settings.rateChangeAt ? Date.parse(s.settings.rateChangeAt) : NaN;
    const own = Boolean(change) && Math.abs(change.atMs - ownAt) < 1000;
    announced.hidden = !change;
    form.querySelector('.withdraw').hidden = !own;
    if (change) {
      const by = own ? 'Announced' : 'Scheduled';
      announced.textContent = `${by}: ${fmt(change.to)}/s from ${new Date(change.atMs).toLocaleTimeString('en-GB')} (in ${duration(change.atMs - serverNow())}); every estimate already counts with it.`;
    }
  }

  // A setting's value as the stats say it: the figure in force where the stats carry one
  // beside the settings (the rate, the cap, the stock, the checkout the pace follows, …),
  // else what the operator set.
  const shownValue = (s, name) => (name in s ? s[name] : (s.settings || {})[name]);

  // The countdowns move between samples too.
  setInterval(() => {
    for (const c of cards.values()) {
      if (c.stats && c.stats.draw) { updateSchedule(c); updateRow(c); }
    }
  }, 1000);

  function message(show, text, isError) {
    const el = card(show).el.querySelector('.form-message');
    el.textContent = text;
    el.classList.toggle('error', Boolean(isError));
  }

  // The in-page confirmation: resolves to { ok, reason }.
  function ask(text, action, withReason) {
    return new Promise((resolve) => {
      els.confirmText.textContent = text;
      els.confirmReasonLabel.hidden = !withReason;
      els.confirmReason.value = withReason ? 'sold out' : '';
      els.confirmOk.textContent = action;
      els.dialog.returnValue = '';
      els.dialog.addEventListener('close', () => {
        resolve({ ok: els.dialog.returnValue === 'ok', reason: els.confirmReason.value.trim() });
      }, { once: true });
      els.dialog.showModal();
      els.confirmOk.focus();
    });
  }

  const ASK = {
    pause: (show) => [`Pause admissions of ${show}? Nobody is let in until you open it again; every fan keeps their place and the gate stays shut.`, 'Pause'],
    close: (show) => [`Lift the gate of ${show}? Anyone can then order without queueing, and every waiting fan is sent on to the shop.`, 'Lift the gate'],
    end: (show) => [`End the on-sale of ${show}? Joins are refused from now on and every waiting fan is told it ended.`, 'End the on-sale'],
    delete: (show) => [`Delete ${show}? Its queue, its settings and every ticket in it are gone; fans following it are told their ticket is unknown. Orders stay.`, 'Delete'],
  };

  // Open, pause, close (lift the gate), end or delete. Every step but opening is asked
  // once more: each stops admissions, lifts the gate or sends fans away.
  async function changePhase(show, action) {
    let body;
    if (ASK[action]) {
      const [text, label] = ASK[action](show);
      const answer = await ask(text, label, action === 'end');
      if (!answer.ok) return;
      if (action === 'end' && answer.reason) body = { reason: answer.reason };
    }
    const button = card(show).el.querySelector(`[data-action="${action}"]`);
    button.disabled = true;
    try {
      const path = action === 'delete' ? route('Show', show) : route(action[0].toUpperCase() + action.slice(1), show);
      const res = await call(action === 'delete' ? 'DELETE' : 'POST', path, body);
      if (res.status !== 204) throw new Error(await problem(res));
      if (action === 'delete') {
        forget(show);
        return;
      }
      const phase = { open: 'open', pause: 'paused', close: 'closed', end: 'ended' }[action];
      updateCard({ showId: show, open: action === 'open', phase, reason: body && body.reason, lost: false });
      message(show, PHASE_DONE[action]);
      if (!streamShows.has(show)) connect(false);
    } catch (e) {
      if (e.message !== 'unauthorised') message(show, `Could not ${action}: ${e.message}`, true);
      button.disabled = false;
    }
  }

  // A setting as the operator typed it, as JSON, checked against the schema's bounds; a
  // value out of them is an Error that says what the setting takes. `needed`: empty will not
  // do, even where the setting takes `""`.
  function readSetting(f, input, needed) {
    const label = f.label;
    if (f.kind === 'checkbox') return input.checked;
    const text = input.value.trim();
    if (f.kind === 'number') {
      const n = Number(text);
      if (text === '' || !f.ranges.some((r) => within(r, n))) throw new Error(numberWords(f));
      return n;
    }
    if (f.kind === 'json') {
      if (text === '') return [];
      try {
        return JSON.parse(text);
      } catch {
        throw new Error(`${label} is written in JSON: a list, [] for none.`);
      }
    }
    if (text === '') {
      if (!needed && f.alts.some((a) => fits(a, ''))) return '';
      throw new Error(f.kind === 'datetime-local' ? `${label}: pick a date and time.` : `${label} cannot be left empty.`);
    }
    if (f.kind === 'datetime-local') {
      const ms = new Date(text).getTime();
      if (Number.isNaN(ms)) throw new Error(`${label}: pick a date and time.`);
      // Every time a show is set to lies ahead; the server refuses one past.
      if (ms <= serverNow()) throw new Error(`${label} must be in the future.`);
      return new Date(ms).toISOString();
    }
    if (f.kind === 'select') return f.options.find((o) => String(o) === text) ?? text;
    if (!f.alts.some((a) => fits(a, text))) {
      const most = Math.max(...f.alts.map((a) => a.maxLength ?? Infinity));
      throw new Error(text.length > most
        ? `${label} is at most ${fmt(most)} characters.`
        : `${label} is not a value the server takes${f.example ? ` (such as ${f.example})` : ''}.`);
    }
    return text;
  }

  const within = (r, n) => Number.isFinite(n) && (!r.integer || Number.isInteger(n))
    && (r.lowOpen ? n > r.low : n >= r.low) && (r.highOpen ? n < r.high : n <= r.high);

  // "Admit per second is a whole number from 1 to 10,000.", from the schema's ranges.
  function numberWords(f) {
    const span = (r) => {
      const low = Number.isFinite(r.low) ? (r.lowOpen ? `more than ${fmt(r.low)}` : fmt(r.low)) : '';
      const high = Number.isFinite(r.high) ? (r.highOpen ? `less than ${fmt(r.high)}` : fmt(r.high)) : '';
      if (low && high) return r.low === r.high ? low : `from ${low} to ${high}`;
      return low ? `${low} or more` : high ? `up to ${high}` : '';
    };
    const kind = f.ranges.every((r) => r.integer) ? 'a whole number' : 'a number';
    const spans = f.ranges.map(span).filter(Boolean);
    return `${f.label} is ${kind}${spans.length > 1 ? `: ${spans.join(', or ')}` : spans.length ? ` ${spans[0]}` : ''}.`;
  }

  // Whether the string `value` is one of those the schema `a` describes (a pattern this
  // browser cannot read is left to the server).
  function fits(a, value) {
    if (a.type !== 'string' || value.length < (a.minLength ?? 0) || value.length > (a.maxLength ?? Infinity)) return false;
    if (!a.pattern) return true;
    try {
      return new RegExp(a.pattern).test(value);
    } catch {
      return true;
    }
  }

  // The settings changed in the form, checked as the schema bounds them: only those are sent
  // (and the settings that go with them).
  function changedSettings(form) {
    const sent = new Set(settingFields.filter((f) => edited(form.elements[f.name])).map((f) => f.name));
    const partners = new Set();
    for (const group of TOGETHER) {
      if (group.some((name) => sent.has(name))) for (const name of group) { sent.add(name); partners.add(name); }
    }
    const body = {};
    for (const f of settingFields) {
      if (sent.has(f.name)) body[f.name] = readSetting(f, form.elements[f.name], partners.has(f.name));
    }
    return body;
  }

  async function saveSettings(show, form) {
    if (!settingFields) {
      message(show, 'The settings are not loaded yet: try again in a moment.', true);
      return;
    }
    let body;
    try {
      body = changedSettings(form);
    } catch (e) {
      message(show, e.message, true);
      return;
    }
    if (!Object.keys(body).length) {
      message(show, 'Nothing changed: edit a setting first.', true);
      return;
    }
    const said = [];
    if ('admitPerSecond' in body) said.push(`rate ${fmt(body.admitPerSecond)}/s from the next tick`);
    if ('stock' in body) said.push(body.stock === 0 ? 'no stock' : `${fmt(body.stock)} seats`);
    if ('opensAt' in body) said.push('opening scheduled');
    const ok = await send(show, body, `Saved: ${Object.keys(body).join(', ')}${said.length ? ` (${said.join('; ')})` : ''}.`);
    // What was sent is in force now: no longer an edit.
    if (ok) for (const input of form.elements) if (input.name) input.dataset.shown = valueOf(input);
  }

  async function send(show, body, done) {
    try {
      const res = await call('PUT', route('Config', show), body);
      if (res.status !== 200) throw new Error(await problem(res));
      updateCard(await res.json());
      message(show, done);
      return true;
    } catch (e) {
      if (e.message !== 'unauthorised') message(show, `Not saved: ${e.message}`, true);
      return false;
    }
  }

  async function problem(res) {
    const body = await res.json().catch(() => ({}));
    return body.message || body.detail || `the server answered ${res.status}`;
  }

  function watch(show) {
    watched.add(show);
    saveWatched();
    card(show);
    render();
    connect(false);
  }

  els.watchForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const show = els.watchShow.value.trim();
    if (!SHOW_ID.test(show)) {
      els.watchError.textContent = 'A show id is 1 to 64 letters, digits, dots, dashes or underscores.';
      els.watchError.hidden = false;
      return;
    }
    els.watchError.hidden = true;
    els.watchShow.value = '';
    watch(show);
    select(show, false);
  });

  // ---- the show's own waiting page ---------------------------------------------------------
  //
  // A template, words and files for the show's waiting page (docs/pages.md), with a live
  // preview of the draft as fans would see it, in any state and language: the server renders
  // it (`POST …/page/preview`, with the checks a save makes) and the console shows the HTML in
  // a sandboxed frame that runs nothing. A save (`PUT …/page`) replaces the whole page, files
  // included, so the editor holds every file as base64: those the page kept are read back
  // from where they are served when the page is first read, those chosen here as they are.
  // The routes are the server's contract, read by name from the OpenAPI document.

  const PREVIEW_DELAY_MS = 400;
  const pageRoutes = openapi.then((doc) => ({ page: pathOf(doc, 'setPage'), preview: pathOf(doc, 'previewPage') }));
  pageRoutes.catch(() => {});

  // The path of the operation `id` in the OpenAPI document.
  function pathOf(doc, id) {
    for (const [path, item] of Object.entries(doc.paths || {})) {
      if (Object.values(item).some((op) => op && op.operationId === id)) return path;
    }
    throw new Error(`the server's document has no ${id}`);
  }
  const showPath = (path, show) => path.replace(/\{show_?id\}/i, encodeURIComponent(show));
  const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

  // A file's bytes as base64, without the `data:` prefix.
  const base64Of = (blob) => new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => {
      const url = String(reader.result);
      resolve(url.slice(url.indexOf(',') + 1));
    };
    reader.onerror = () => reject(reader.error || new Error('the file could not be read'));
    reader.readAsDataURL(blob);
  });

  const kib = (bytes) => `${fmt(Math.max(1, Math.round(bytes / 1024)))} KiB`;

  function pageEditor(show, el) {
    const box = el.querySelector('.shop-page');
    const form = box.querySelector('.page-form');
    const q = (css) => box.querySelector(css);
    const ed = {
      show, box, form,
      template: form.elements.template, messages: form.elements.messages,
      language: form.elements.defaultLanguage, chooser: form.elements.files,
      list: q('.page-file-list'), error: q('.page-error'), note: q('.page-message'),
      kind: q('.page-kind'), save: q('.page-save'), reset: q('.page-reset'),
      region: q('.page-preview'), state: q('.preview-state'), lang: q('.preview-lang'),
      frame: q('.preview-frame'), refused: q('.preview-error'), unsaved: q('.preview-unsaved'),
      grid: q('.preview-grid'), all: q('.preview-all'),
      files: new Map(), // name -> { base64, path: where it is served (null until saved), size }
      loading: null,    // the first read of the page, under way or done
      loaded: false,
      own: false,       // whether the server holds a page of the show's own
      timer: 0,
      running: null,    // the AbortController of the preview under way
      gridOpen: false,
    };
    // Each hint read with its field.
    for (const hint of box.querySelectorAll('[data-hint]')) {
      hint.id = `page-hint-${++fieldCount}`;
      form.elements[hint.dataset.hint].setAttribute('aria-describedby', hint.id);
    }
    box.addEventListener('toggle', () => {
      if (box.open) loadPage(ed).then(() => preview(ed), () => {});
    });
    const changed = () => {
      ed.dirty = true;
      showKind(ed);
      schedulePreview(ed);
    };
    // Typed (`input`), or emptied or filled by a tool (some fire `change` only).
    for (const field of [ed.template, ed.messages]) {
      field.addEventListener('input', changed);
      field.addEventListener('change', changed);
    }
    ed.language.addEventListener('change', changed);
    ed.state.addEventListener('change', () => preview(ed));
    ed.lang.addEventListener('change', () => preview(ed));
    ed.chooser.addEventListener('change', () => chooseFiles(ed).then(changed));
    ed.all.addEventListener('click', () => toggleGrid(ed));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      savePage(ed);
    });
    ed.reset.addEventListener('click', () => resetPage(ed));
    return ed;
  }

  function showKind(ed) {
    const kind = ed.own ? 'its own page' : 'the built-in page';
    ed.kind.textContent = ed.loaded ? `· ${kind}${ed.dirty ? ', changes not saved' : ''}` : '';
    ed.box.dataset.own = String(ed.own);
  }

  function pageSaid(ed, text, isError) {
    ed.error.textContent = isError ? text : '';
    ed.error.hidden = !isError;
    ed.note.textContent = isError ? '' : text;
  }

  // Reads the show's page once (again after a failure): the form is filled with it.
  function loadPage(ed) {
    if (!ed.loading) {
      ed.loading = (async () => {
        ed.save.disabled = true;
        const { page } = await pageRoutes;
        const res = await call('GET', showPath(page, ed.show));
        if (res.status !== 200 && res.status !== 404) throw new Error(await problem(res));
        await fillPage(ed, res.status === 200 ? await res.json() : {});
        ed.own = res.status === 200;
        ed.loaded = true;
        ed.save.disabled = false;
        showKind(ed);
        ed.box.dataset.loaded = 'true';
      })();
      ed.loading.catch((e) => {
        ed.loading = null;
        ed.save.disabled = false;
        if (e.message !== 'unauthorised') pageSaid(ed, `The show's page could not be read: ${e.message}`, true);
      });
    }
    return ed.loading;
  }

  // The form holds `doc` (as GET answers it: files by the path each is served at, read back
  // here as base64 so that a save keeps them).
  async function fillPage(ed, doc) {
    ed.template.value = doc.template || '';
    ed.messages.value = isObject(doc.messages) && Object.keys(doc.messages).length ? JSON.stringify(doc.messages, null, 2) : '';
    ed.language.value = doc.defaultLanguage || '';
    ed.dirty = false;
    const files = new Map();
    await Promise.all(Object.entries(doc.files || {}).map(async ([name, path]) => {
      const kept = { base64: null, path, size: 0 };
      files.set(name, kept);
      try {
        const res = await fetch(path);
        if (!res.ok) throw new Error(`the server answered ${res.status}`);
        const blob = await res.blob();
        kept.size = blob.size;
        kept.base64 = await base64Of(blob);
      } catch (e) {
        kept.error = e.message;
      }
    }));
    ed.files = files;
    listFiles(ed);
  }

  async function chooseFiles(ed) {
    const chosen = [...ed.chooser.files];
    ed.chooser.value = '';
    for (const file of chosen) {
      try {
        // Chosen again under a name the page has: this one replaces it.
        ed.files.set(file.name, { base64: await base64Of(file), path: null, size: file.size });
      } catch (e) {
        pageSaid(ed, `${file.name} could not be read: ${e.message}`, true);
      }
    }
    listFiles(ed);
  }

  function listFiles(ed) {
    ed.list.replaceChildren();
    for (const [name, f] of ed.files) {
      const li = document.createElement('li');
      li.dataset.file = name;
      const code = document.createElement('code');
      code.textContent = name;
      const about = document.createElement('small');
      about.textContent = f.base64 === null ? ` could not be read back (${f.error}): choose it again or remove it`
        : f.path ? ` ${kib(f.size)}, saved` : ` ${kib(f.size)}, not saved yet`;
      li.append(code, about);
      if (f.path) {
        const open = document.createElement('a');
        open.href = f.path;
        open.target = '_blank';
        open.rel = 'noopener';
        open.textContent = 'open ↗';
        open.setAttribute('aria-label', `Open ${name}`);
        li.append(' ', open);
      }
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.className = 'link-button';
      remove.textContent = 'Remove';
      remove.setAttribute('aria-label', `Remove ${name}`);
      remove.addEventListener('click', () => {
        ed.files.delete(name);
        listFiles(ed);
        ed.dirty = true;
        showKind(ed);
        schedulePreview(ed);
      });
      li.append(' ', remove);
      ed.list.appendChild(li);
    }
    ed.list.hidden = ed.files.size === 0;
    ed.unsaved.hidden = ![...ed.files.values()].some((f) => !f.path);
  }

  // The draft as `PUT …/page` and the preview take it; an Error saying what is wrong with it.
  function draftBody(ed) {
    const body = {};
    if (ed.template.value.trim()) body.template = ed.template.value;
    const words = ed.messages.value.trim();
    if (words) {
      let parsed;
      try {
        parsed = JSON.parse(words);
      } catch (e) {
        throw new Error(`Words are written in JSON (${e.message}), such as {"fr": {"wait.new.join": "Entrer"}}.`);
      }
      if (!isObject(parsed) || !Object.values(parsed).every(isObject)) {
        throw new Error('Words are an object by language, each an object by key, such as {"fr": {"wait.new.join": "Entrer"}}.');
      }
      if (Object.keys(parsed).length) body.messages = parsed;
    }
    if (ed.language.value) body.defaultLanguage = ed.language.value;
    if (ed.files.size) {
      body.files = {};
      for (const [name, f] of ed.files) {
        if (f.base64 === null) throw new Error(`${name} could not be read back from the server: choose it again or remove it.`);
        body.files[name] = f.base64;
      }
    }
    return body;
  }

  function schedulePreview(ed) {
    clearTimeout(ed.timer);
    ed.timer = setTimeout(() => preview(ed), PREVIEW_DELAY_MS);
  }

  // Renders the draft in the state and language chosen (and in every state, in the grid),
  // or says why the server refuses it.
  async function preview(ed) {
    clearTimeout(ed.timer);
    if (!ed.box.open || !ed.loaded) return;
    // A newer draft: the preview under way is given up.
    if (ed.running) ed.running.abort();
    ed.running = null;
    ed.region.removeAttribute('aria-busy');
    let body;
    try {
      body = draftBody(ed);
    } catch (e) {
      previewRefused(ed, e.message);
      return;
    }
    const controller = new AbortController();
    ed.running = controller;
    const state = ed.state.value;
    const lang = ed.lang.value;
    const states = ed.gridOpen ? [...ed.state.options].map((o) => o.value) : [];
    ed.region.setAttribute('aria-busy', 'true');
    try {
      const path = showPath((await pageRoutes).preview, ed.show);
      const render = async (which) => {
        const query = `?state=${encodeURIComponent(which)}&lang=${encodeURIComponent(lang)}`;
        const res = await call('POST', path + query, body, { accept: 'text/html', signal: controller.signal });
        if (res.status !== 200) throw new Error(await problem(res));
        return res.text();
      };
      const [main, ...each] = await Promise.all([render(state), ...states.map(render)]);
      if (controller.signal.aborted) return;
      ed.refused.hidden = true;
      showFrame(ed.frame, main, state, lang);
      states.forEach((which, i) => showFrame(ed.grid.querySelector(`[data-state="${which}"] iframe`), each[i], which, lang));
      ed.grid.hidden = !ed.gridOpen;
      ed.region.dataset.preview = 'shown';
    } catch (e) {
      if (controller.signal.aborted || e.message === 'unauthorised') return;
      previewRefused(ed, `The server refuses the page: ${e.message}`);
    } finally {
      if (ed.running === controller) {
        ed.running = null;
        ed.region.removeAttribute('aria-busy');
      }
    }
  }

  // Why the draft shows no page, instead of a page.
  function previewRefused(ed, why) {
    ed.refused.textContent = why;
    ed.refused.hidden = false;
    ed.frame.hidden = true;
    ed.grid.hidden = true;
    ed.region.dataset.preview = 'refused';
  }

  function showFrame(frame, html, state, lang) {
    frame.srcdoc = html;
    frame.dataset.state = state;
    frame.dataset.lang = lang;
    frame.hidden = false;
  }

  // Every state side by side, small; a state's name shows it large.
  function toggleGrid(ed) {
    ed.gridOpen = !ed.gridOpen;
    ed.all.setAttribute('aria-expanded', String(ed.gridOpen));
    ed.all.textContent = ed.gridOpen ? 'Hide the states' : 'Preview every state';
    if (!ed.grid.childElementCount) {
      for (const option of ed.state.options) {
        const figure = document.createElement('figure');
        figure.className = 'preview-thumb';
        figure.dataset.state = option.value;
        const holder = document.createElement('div');
        holder.className = 'thumb-frame';
        const frame = document.createElement('iframe');
        frame.setAttribute('sandbox', 'allow-same-origin');
        frame.title = `Preview: ${option.textContent}`;
        frame.tabIndex = -1;
        frame.hidden = true;
        holder.appendChild(frame);
        const caption = document.createElement('figcaption');
        const pick = document.createElement('button');
        pick.type = 'button';
        pick.className = 'link-button';
        pick.textContent = option.textContent;
        pick.setAttribute('aria-label', `Show ${option.textContent} above`);
        pick.addEventListener('click', () => {
          ed.state.value = option.value;
          preview(ed);
          ed.frame.scrollIntoView({ block: 'nearest' });
        });
        caption.appendChild(pick);
        figure.append(holder, caption);
        ed.grid.appendChild(figure);
      }
    }
    ed.grid.hidden = true;
    preview(ed);
  }

  async function savePage(ed) {
    try {
      await loadPage(ed);
    } catch {
      return; // said by loadPage
    }
    let body;
    try {
      body = draftBody(ed);
    } catch (e) {
      pageSaid(ed, `Not saved: ${e.message}`, true);
      return;
    }
    if (!Object.keys(body).length) {
      pageSaid(ed, 'Not saved: the page is empty. “Use the built-in page” removes the show’s own.', true);
      return;
    }
    ed.save.disabled = true;
    pageSaid(ed, 'Saving…');
    try {
      const res = await call('PUT', showPath((await pageRoutes).page, ed.show), body);
      if (res.status !== 200) throw new Error(await problem(res));
      const kept = await res.json();
      for (const [name, path] of Object.entries(kept.files || {})) {
        const f = ed.files.get(name);
        if (f) f.path = path;
      }
      ed.own = true;
      ed.dirty = false;
      listFiles(ed);
      showKind(ed);
      pageSaid(ed, 'Saved: fans see this page from now on.');
      preview(ed);
    } catch (e) {
      if (e.message !== 'unauthorised') pageSaid(ed, `Not saved: ${e.message}`, true);
    } finally {
      ed.save.disabled = false;
    }
  }

  async function resetPage(ed) {
    const answer = await ask(`Use the built-in waiting page for ${ed.show}? The show’s own template, words and files are removed, and fans see the built-in page at once.`, 'Use the built-in page', false);
    if (!answer.ok) return;
    ed.reset.disabled = true;
    try {
      const res = await call('DELETE', showPath((await pageRoutes).page, ed.show));
      // 404: it had no page of its own: the built-in one already.
      if (res.status !== 204 && res.status !== 404) throw new Error(await problem(res));
      await fillPage(ed, {});
      ed.own = false;
      ed.loaded = true;
      ed.loading = ed.loading || Promise.resolve();
      showKind(ed);
      pageSaid(ed, 'The built-in page is back: fans see it now.');
      preview(ed);
    } catch (e) {
      if (e.message !== 'unauthorised') pageSaid(ed, `Not removed: ${e.message}`, true);
    } finally {
      ed.reset.disabled = false;
    }
  }

  // ---- the on-sale's report ----------------------------------------------------------------
  //
  // The report (docs/report.md) is the operator's, so it wants the bearer token, which a link
  // cannot send: the console fetches it and writes the HTML into a window of its own, or
  // saves the JSON or CSV as a file. A window written so is this page's origin with this
  // page's CSP, so the report's stylesheet (`/static`) loads and nothing else does; the
  // report's own CSP is laid over it. The route is read by name from the OpenAPI document.

  const reportRoute = openapi.then((doc) => pathOf(doc, 'showReport'));
  reportRoute.catch(() => {});
  const REPORT_TYPES = { html: 'text/html', json: 'application/json', csv: 'text/csv' };

  // The report of `show` as `format` asks (`html`, `json`, `csv`); an Error saying why not.
  async function fetchReport(show, format) {
    const path = `${showPath(await reportRoute, show)}?format=${format}`;
    const res = await call('GET', path, undefined, { accept: REPORT_TYPES[format] });
    if (res.status !== 200) throw new Error(await problem(res));
    return res;
  }

  // The report's page runs no script and loads nothing but its stylesheet. The window it is
  // written into has the console's origin (and its token in sessionStorage), so it is held to
  // that by a policy of the console's own, whatever the answer's headers said (a proxy may
  // strip them). frame-ancestors works as a header only.
  const REPORT_CSP_META = '<meta http-equiv="Content-Security-Policy" content="default-src '
    + '&#39;none&#39;; style-src &#39;self&#39;; img-src &#39;self&#39; data:; '
    + 'base-uri &#39;none&#39;; form-action &#39;none&#39;">';

  // The report's page with the policy first in its head; an answer without a head is refused.
  function withPolicy(html) {
    let put = false;
    const out = html.replace(/<head\b[^>]*>/i, (head) => { put = true; return `${head}\n${REPORT_CSP_META}`; });
    if (!put) throw new Error('the report came without a <head>');
    return out;
  }

  async function openReport(show, button) {
    // Opened in the click itself: a window opened once the report is in would be taken for a
    // pop-up. Not `noopener`: the console writes the report into it.
    const w = window.open('', '_blank');
    if (!w) {
      message(show, 'The browser blocked the report\'s window: allow pop-ups for this console and try again.', true);
      return;
    }
    w.document.title = `Report: ${show}`;
    w.document.body.textContent = 'Loading the report…';
    button.disabled = true;
    try {
      const res = await fetchReport(show, 'html');
      const html = await res.text();
      if (w.closed) return;
      const page = withPolicy(html);
      w.document.open();
      w.document.write(page);
      w.document.close();
      // Its "as JSON or CSV" links would be followed without the token: the console saves
      // those files instead.
      for (const a of w.document.querySelectorAll('a[href*="format="]')) {
        const format = new URL(a.href, location.href).searchParams.get('format');
        if (format !== 'json' && format !== 'csv') continue;
        a.addEventListener('click', (e) => {
          e.preventDefault();
          saveReport(show, format, null, w.document);
        });
      }
      w.opener = null;
      message(show, 'Report opened in a new window.');
    } catch (e) {
      w.close();
      if (e.message !== 'unauthorised') message(show, `No report: ${e.message}`, true);
    } finally {
      button.disabled = false;
    }
  }

  // Saves the report as `report-{show}.{format}`; `doc`: the document whose link asked.
  async function saveReport(show, format, button, doc = document) {
    if (button) button.disabled = true;
    try {
      const res = await fetchReport(show, format);
      const url = URL.createObjectURL(await res.blob());
      const a = doc.createElement('a');
      a.href = url;
      a.download = `report-${show}.${format}`;
      a.hidden = true;
      // In the document while clicked, as some browsers want it.
      doc.body.appendChild(a);
      a.click();
      a.remove();
      // The download has read the file by then.
      setTimeout(() => URL.revokeObjectURL(url), 60000);
      message(show, `Report saved as ${a.download}.`);
    } catch (e) {
      if (e.message !== 'unauthorised') message(show, `No report: ${e.message}`, true);
    } finally {
      if (button) button.disabled = false;
    }
  }

  // ---- ticket lookup, for support ----------------------------------------------------------

  const STATUS_WORDS = {
    WAITING: 'Waiting', ADMITTED: 'Admitted', UNKNOWN: 'Unknown', CLOSED: 'Sent on (gate lifted)', ENDED: 'On-sale ended',
  };

  els.lookupForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const id = els.lookupTicket.value.trim().toLowerCase();
    const box = els.lookupResult;
    els.watchError.hidden = true;
    if (!/^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/.test(id)) {
      box.hidden = true;
      els.watchError.textContent = 'A ticket id is a UUID, such as 0b8f5c2e-5d1a-4c52-9e57-2f0d4c1e9a3b.';
      els.watchError.hidden = false;
      return;
    }
    try {
      const res = await call('GET', route('Ticket').replace('{ticket_id}', encodeURIComponent(id)));
      if (res.status !== 200) throw new Error(await problem(res));
      const found = await res.json();
      const t = found.ticket;
      const show = $('lookup-show');
      show.textContent = found.showId;
      show.onclick = (ev) => {
        ev.preventDefault();
        if (!cards.has(found.showId)) watch(found.showId);
        select(found.showId, true);
      };
      $('lookup-status').textContent = (STATUS_WORDS[t.status] || t.status) + (t.preQueue ? ' (pre-queue, before the draw)' : '') + (t.reason ? `: ${t.reason}` : '');
      $('lookup-position').textContent = t.position ? fmt(t.position) : '–';
      $('lookup-arrival').textContent = t.arrival ? fmt(t.arrival) : '–';
      $('lookup-time').textContent = t.status === 'ADMITTED'
        ? `admitted, ${duration((t.expiresInSeconds || 0) * 1000)} left to buy`
        : typeof t.etaSeconds === 'number' ? `about ${etaWords(t.etaSeconds)} to wait`
          : typeof t.opensInSeconds === 'number' ? `opens in ${duration(t.opensInSeconds * 1000)}` : '–';
      $('lookup-phase').textContent = PHASE_WORDS[found.phase] || found.phase;
      box.dataset.ticket = id;
      box.hidden = false;
    } catch (err) {
      if (err.message === 'unauthorised') return;
      box.hidden = true;
      els.watchError.textContent = `Not found: ${err.message}`;
      els.watchError.hidden = false;
    }
  });

  // ---- the chart ---------------------------------------------------------------------------

  const SVG = 'http://www.w3.org/2000/svg';
  const HEIGHT = 200;
  const LEFT = 56;
  const QUEUE_TOP = 14;
  const QUEUE_BOTTOM = 118;
  const ADMIT_TOP = 138;
  const ADMIT_BOTTOM = 178;
  const MIN_SPAN_MS = 60 * 1000;

  const ago = (ms) => (ms >= 60000 ? `${+(ms / 60000).toFixed(1)} min` : `${Math.round(ms / 1000)} s`);

  // 1, 2 or 5 times a power of ten, at least n: axis maxima a person reads easily.
  function niceMax(n) {
    if (n <= 0) return 1;
    const p = 10 ** Math.floor(Math.log10(n));
    for (const m of [1, 2, 5, 10]) if (m * p >= n) return m * p;
    return 10 * p;
  }

  function node(name, attrs, text) {
    const n = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
    if (text !== undefined) n.textContent = text;
    return n;
  }

  function drawChart(show) {
    const svg = cards.get(show).el.querySelector('.chart-svg');
    const points = history.get(show) || [];
    // Drawn at the size it is shown, so labels keep their size on any screen.
    const width = Math.max(320, Math.round(svg.clientWidth || 640));
    const RIGHT = width - 14;
    svg.setAttribute('viewBox', `0 0 ${width} ${HEIGHT}`);
    svg.replaceChildren();
    svg.dataset.samples = String(points.length);
    const now = points.length ? points[points.length - 1].at : Date.now();
    // The time axis spans the history there is (at least a minute, at most five), so a
    // console opened a moment ago already draws a readable chart.
    const span = Math.min(HISTORY_MS, Math.max(MIN_SPAN_MS, points.length ? now - points[0].at : 0));
    const x = (at) => LEFT + (RIGHT - LEFT) * (1 - (now - at) / span);
    const queueMax = niceMax(Math.max(0, ...points.map((p) => p.queue)));
    const admitMax = niceMax(Math.max(0, ...points.map((p) => Math.max(p.admitted || 0, p.rate || 0))));
    const qy = (v) => QUEUE_BOTTOM - (QUEUE_BOTTOM - QUEUE_TOP) * (v / queueMax);
    const ay = (v) => ADMIT_BOTTOM - (ADMIT_BOTTOM - ADMIT_TOP) * (v / admitMax);

    for (const y of [QUEUE_TOP, (QUEUE_TOP + QUEUE_BOTTOM) / 2, QUEUE_BOTTOM, ADMIT_TOP, ADMIT_BOTTOM]) {
      svg.appendChild(node('line', { class: 'grid', x1: LEFT, x2: RIGHT, y1: y, y2: y }));
    }
    svg.appendChild(node('text', { x: LEFT - 6, y: QUEUE_TOP + 4, 'text-anchor': 'end' }, fmt(queueMax)));
    svg.appendChild(node('text', { x: LEFT - 6, y: QUEUE_BOTTOM + 4, 'text-anchor': 'end' }, '0'));
    svg.appendChild(node('text', { x: LEFT - 6, y: ADMIT_TOP + 4, 'text-anchor': 'end' }, fmt(admitMax)));
    svg.appendChild(node('text', { x: LEFT - 6, y: ADMIT_BOTTOM + 4, 'text-anchor': 'end' }, '0'));
    svg.appendChild(node('text', { x: LEFT, y: 196 }, `${ago(span)} ago`));
    svg.appendChild(node('text', { x: (LEFT + RIGHT) / 2, y: 196, 'text-anchor': 'middle' }, `${ago(span / 2)} ago`));
    svg.appendChild(node('text', { x: RIGHT, y: 196, 'text-anchor': 'end' }, 'now'));

    const barWidth = Math.max(1, ((RIGHT - LEFT) / (span / 1000)) * 0.7);
    for (const p of points) {
      if (!p.admitted) continue;
      const top = ay(p.admitted);
      svg.appendChild(node('rect', {
        class: 'admit-bar', x: x(p.at) - barWidth, y: top, width: barWidth, height: ADMIT_BOTTOM - top,
      }));
    }
    // The rate in force over the admissions: where it steps down, the pace followed a
    // struggling checkout.
    const rated = points.filter((p) => typeof p.rate === 'number');
    if (rated.length) {
      const rateLine = rated.map((p) => `${x(p.at).toFixed(1)},${ay(Math.min(p.rate, admitMax)).toFixed(1)}`).join(' ');
      svg.appendChild(node('polyline', { class: 'rate-line', points: rateLine }));
    }
    if (points.length) {
      const line = points.map((p) => `${x(p.at).toFixed(1)},${qy(p.queue).toFixed(1)}`).join(' ');
      const first = x(points[0].at).toFixed(1);
      const last = x(points[points.length - 1].at).toFixed(1);
      svg.appendChild(node('path', {
        class: 'queue-area', d: `M${first},${QUEUE_BOTTOM} L${line.replace(/ /g, ' L')} L${last},${QUEUE_BOTTOM} Z`,
      }));
      svg.appendChild(node('polyline', { class: 'queue-line', points: line }));
    }
    const latest = points[points.length - 1];
    const admitted = points.reduce((sum, p) => sum + (p.admitted || 0), 0);
    svg.setAttribute('aria-label', latest
      ? `${show}: ${fmt(latest.queue)} in the queue now; ${fmt(admitted)} admitted in the last ${ago(now - points[0].at)}.`
      : `${show}: no figures yet.`);
  }

  window.addEventListener('resize', () => {
    if (selected && cards.has(selected)) drawChart(selected);
  });

  // ---- start -------------------------------------------------------------------------------

  for (const show of watched) card(show);
  render();
  if (token) {
    showConsole();
    connect(false);
  } else {
    showLogin();
  }
})();
