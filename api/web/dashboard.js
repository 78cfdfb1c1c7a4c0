// The logtally dashboard: the live window from the event stream (or, when the
// stream is down, from polling the cached endpoints), history from the series
// endpoint, the daemon's state from /api/v1/status.
//
// Everything that comes from a log (paths, rejected lines) is put in the page
// as text (textContent), never as markup; the Content-Security-Policy allows
// no other script than this file. Charts are plain SVG drawn here. URLs are
// relative, so the page works under a proxy's prefix too.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const SVG = "http://www.w3.org/2000/svg";
  const number = new Intl.NumberFormat("en");
  const POLL_MS = 5000; // the live endpoints' default max-age
  const STREAM_RETRY_MS = 30000; // a refused or closed stream is tried again after this
  const STATUS_MS = 5000;
  const RANGES = {
    hour: { points: 60, stepSeconds: 60, step: "1m", label: "the last hour, by minute", refresh: 15000 },
    day: { points: 24, stepSeconds: 3600, step: "1h", label: "the last day, by hour", refresh: 60000 },
    month: { points: 30, stepSeconds: 86400, step: "1d", label: "the last 30 days, by day", refresh: 300000 },
  };
  const STATUS_CLASSES = ["1xx", "2xx", "3xx", "4xx", "5xx"];
  const PANELS_MS = 10000; // the breakdowns of the window are asked for again at most this often
  const MAX_DAYS = 400; // the longest range of days the API answers (MaxPagesRange)
  // BREAKDOWNS are the panels, in the order shown: a breakdown's title, how
  // many keys it shows, and for the heat strip, its keys in their order.
  const HOURS = Array.from({ length: 24 }, (_, h) => String(h).padStart(2, "0"));
  const BREAKDOWNS = [
    { name: "channel", title: "Channels", key: "Channel" },
    { name: "referrer", title: "Referring sites", key: "Site" },
    { name: "utm-source", title: "Campaign sources", key: "Source" },
    { name: "utm-campaign", title: "Campaigns", key: "Campaign" },
    { name: "browser", title: "Browsers", key: "Browser" },
    { name: "os", title: "Systems", key: "System" },
    { name: "device", title: "Devices", key: "Device" },
    { name: "country", title: "Countries", key: "Country" },
    { name: "status", title: "Status codes", key: "Status" },
    { name: "not-found", title: "Not found", key: "Path", paths: true },
    { name: "hour", title: "Hour of day", key: "Hour", limit: 24, strip: HOURS },
    { name: "weekday", title: "Day of week", key: "Day", limit: 7, strip: ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] },
    // A request's time, as the upper bound of its bucket (breakdown.TimeKeys).
    { name: "request-time", title: "Request time", key: "Up to", limit: 11,
      strip: ["10ms", "25ms", "50ms", "100ms", "250ms", "500ms", "1s", "2.5s", "5s", "10s", "more"] },
  ];
  const PANEL_LIMIT = 10;

  const state = {
    site: "", // the chosen site; "" for all of them
    range: "hour",
    windowEnd: null, // the live window's end: "now" for the charts
    seriesAt: 0, // when the series was last asked for
    series: null,
    stream: null,
    pollTimer: 0,
    retryTimer: 0,
    dayChosen: false,
    livePages: "", // the top pages shown, as JSON
    dates: null, // a chosen range of days, {from, to} as YYYY-MM-DD, or null for the tabs and the window
    breakdowns: [], // the breakdowns on, as GET /api/v1/breakdowns lists them
    panelsAt: 0, // when the breakdowns were last asked for
    panelsAsked: 0, // counts the askings, so that a late answer to an older one is dropped
  };

  // SITED are the endpoints that answer for one site with ?site=.
  const SITED = new Set(["api/v1/stats", "api/v1/pages", "api/v1/pages/count", "api/v1/series"]);

  // url builds a relative API URL, with the chosen site where it counts.
  function url(path, params) {
    const u = new URL(path, document.baseURI);
    for (const [k, v] of Object.entries(params || {})) u.searchParams.set(k, String(v));
    if (state.site && SITED.has(path)) u.searchParams.set("site", state.site);
    return u.toString();
  }

  // getJSON returns the body of a 200 answer, or null for any other answer
  // or a network error.
  async function getJSON(path, params) {
    try {
      const r = await fetch(url(path, params), { cache: "no-cache" });
      return r.ok ? await r.json() : null;
    } catch (e) {
      return null;
    }
  }

  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  }

  const plural = (n, one, many) => `${number.format(n)} ${n === 1 ? one : many}`;

  function duration(seconds) {
    if (seconds % 3600 === 0) return seconds === 3600 ? "hour" : plural(seconds / 3600, "hour", "hours");
    if (seconds % 60 === 0) return seconds === 60 ? "minute" : plural(seconds / 60, "minute", "minutes");
    return plural(seconds, "second", "seconds");
  }

  function bytes(n) {
    if (n < 1024) return plural(n, "byte", "bytes");
    const units = ["KiB", "MiB", "GiB", "TiB"];
    let i = -1;
    do { n /= 1024; i++; } while (n >= 1024 && i < units.length - 1);
    return `${n.toFixed(n < 10 ? 1 : 0)} ${units[i]}`;
  }

  const clock = (d) => d.toLocaleTimeString("en-GB", { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  const hhmm = (d) => d.toLocaleTimeString("en-GB", { hour: "2-digit", minute: "2-digit" });
  const dayName = (d) => d.toLocaleDateString("en-GB", { day: "numeric", month: "short" });
  const isoDay = (d) => `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}-${String(d.getDate()).padStart(2, "0")}`;

  function setConn(s, text) {
    const c = $("conn");
    c.dataset.state = s;
    c.textContent = text;
  }

  // ---- the live window ----------------------------------------------------

  function setFigure(id, n, approximate) {
    const e = $(id);
    const text = (approximate ? "≈ " : "") + number.format(n);
    if (e.textContent !== text) {
      e.textContent = text;
      e.dataset.value = String(n);
    }
  }

  function renderPages(list, note, pages) {
    const items = [];
    const top = pages.length ? pages[0].pageviews : 0;
    for (const p of pages) {
      const li = el("li");
      const bar = el("span", "bar");
      bar.style.width = `${top ? (100 * p.pageviews) / top : 0}%`; // CSSOM, allowed by the policy
      const path = el("span", "path", p.path);
      path.title = p.path;
      li.append(bar, path, el("span", "count", number.format(p.pageviews)));
      items.push(li);
    }
    list.replaceChildren(...items);
    note.hidden = pages.length > 0;
  }

  function renderLive(b) {
    setFigure("visitors", b.visitors, b.approximate);
    setFigure("pageviews", b.pageviews);
    setFigure("requests", b.requests);
    setFigure("rejected", b.rejected);
    const from = new Date(b.from);
    const to = new Date(b.to);
    $("span").textContent = `Live window: the last ${duration(b.window_seconds)}, ${clock(from)} – ${clock(to)}`;
    const pages = JSON.stringify(b.pages || []);
    if (pages !== state.livePages) { // most events change the counts, not the top pages
      state.livePages = pages;
      renderPages($("live-pages"), $("live-pages-note"), b.pages || []);
    }
    const first = state.windowEnd === null;
    state.windowEnd = to;
    if (first && !state.dayChosen) {
      $("day").value = isoDay(new Date(to.getTime() - 1000));
      loadDay();
    }
    if (!state.dates && (first || Date.now() - state.seriesAt >= RANGES[state.range].refresh)) loadSeries();
    if (!state.dates && Date.now() - state.panelsAt >= PANELS_MS) loadPanels();
  }

  // connect opens the event stream. While it is down, the page polls the
  // cached endpoints instead, and tries the stream again later.
  function connect() {
    clearTimeout(state.retryTimer);
    if (state.stream) state.stream.close();
    state.stream = null;
    if (!window.EventSource || state.site) {
      // The stream is of all sites: one site is polled.
      stopPolling();
      startPolling();
      return;
    }
    const es = new EventSource(url("api/v1/events"));
    state.stream = es;
    es.addEventListener("snapshot", (e) => {
      stopPolling();
      setConn("live", "live");
      renderLive(JSON.parse(e.data));
    });
    es.addEventListener("error", () => {
      startPolling();
      if (es.readyState === EventSource.CLOSED) {
        // Refused (503 beyond --max-streams) or gone: the browser will
        // not retry by itself.
        state.stream = null;
        state.retryTimer = setTimeout(connect, STREAM_RETRY_MS);
      }
    });
  }

  function startPolling() {
    if (state.pollTimer) return;
    setConn("polling", `polling every ${POLL_MS / 1000} s`);
    poll();
    state.pollTimer = setInterval(poll, POLL_MS);
  }

  function stopPolling() {
    clearInterval(state.pollTimer);
    state.pollTimer = 0;
  }

  async function poll() {
    const [stats, pages] = await Promise.all([getJSON("api/v1/stats"), getJSON("api/v1/pages")]);
    if (!state.pollTimer) return; // the stream came back meanwhile
    if (!stats || !pages) {
      setConn("offline", "no answer from the daemon");
      return;
    }
    setConn("polling", `polling every ${POLL_MS / 1000} s`);
    renderLive({ ...stats, pages: pages.pages });
  }

  // ---- history ------------------------------------------------------------

  async function loadSeries() {
    if (!state.windowEnd && !state.dates) return;
    state.seriesAt = Date.now();
    const range = rangeKey();
    let params;
    if (state.dates) {
      // Whole days in the daemon's --tz: a date as from is its first
      // second, as to its last.
      params = { from: state.dates.from, to: state.dates.to, step: datesRange().step };
    } else {
      const r = RANGES[state.range];
      // The window's last second is the newest point's; the daemon starts
      // each point at its step's start, so this asks for exactly r.points.
      const to = Math.floor(state.windowEnd.getTime() / 1000) - 1;
      params = { from: to - (r.points - 1) * r.stepSeconds, to, step: r.step };
    }
    const body = await getJSON("api/v1/series", params);
    if (range !== rangeKey()) return; // switched meanwhile
    state.series = body;
    drawSeries();
  }

  // rangeKey names what the chart shows: a tab, or the chosen days.
  const rangeKey = () => (state.dates ? `${state.dates.from}/${state.dates.to}` : state.range);

  // datesRange is the chart's range for the chosen days: by hour for one
  // day, by day for more.
  function datesRange() {
    const { from, to } = state.dates;
    if (from === to) return { step: "1h", label: `${from}, by hour`, refresh: 60000, byDay: false };
    return { step: "1d", label: `${from} to ${to}, by day`, refresh: 300000, byDay: true };
  }

  // chartRange is what the chart shows now: a tab's range or the days'.
  const chartRange = () => (state.dates ? datesRange() : { ...RANGES[state.range], byDay: state.range === "month" });

  // statusOf returns a point's requests by class [1xx..5xx], or null when
  // the series has no status classes.
  function statusOf(p) {
    const s = p.status;
    if (Array.isArray(s) && s.length === 5) return s.map(Number);
    const o = s && typeof s === "object" ? s : p;
    if (STATUS_CLASSES.some((k) => typeof o[k] === "number")) return STATUS_CLASSES.map((k) => Number(o[k] || 0));
    return null;
  }

  const niceMax = (v) => {
    if (v <= 4) return 4;
    const e = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * e >= v) return m * e;
    return 10 * e;
  };

  const tickLabel = (t) => (chartRange().byDay ? dayName(t) : hhmm(t));

  function drawSeries() {
    const chart = $("chart");
    const body = state.series;
    const summary = $("chart-summary");
    const rows = [];
    if (!body || !Array.isArray(body.points)) {
      chart.replaceChildren(svg("text", { x: 12, y: 24, class: "empty" }, "History is not available."));
      summary.textContent = "History is not available.";
      $("chart-table").tBodies[0].replaceChildren();
      $("status-block").hidden = true;
      return;
    }
    // A point before kept_from has null counts: its step is not kept, which
    // is not a zero. It is left out of the lines and shown as such.
    const pts = body.points.map((p) => ({ t: new Date(p.t), held: p.requests !== null && p.requests !== undefined, requests: p.requests, pageviews: p.pageviews, visitors: p.visitors, status: statusOf(p) }));
    const held = pts.filter((p) => p.held);
    const W = Math.max(chart.clientWidth, 300);
    const H = Math.max(chart.clientHeight, 150);
    const m = { l: 48, r: 12, t: 10, b: 24 };
    const max = niceMax(Math.max(0, ...held.map((p) => Math.max(p.requests, p.pageviews, p.visitors))));
    const x = (i) => m.l + (pts.length > 1 ? (i * (W - m.l - m.r)) / (pts.length - 1) : (W - m.l - m.r) / 2);
    const y = (v) => H - m.b - (v * (H - m.t - m.b)) / max;
    chart.setAttribute("viewBox", `0 0 ${W} ${H}`);
    const nodes = [];
    for (let k = 0; k <= 4; k++) {
      const v = (max * k) / 4;
      nodes.push(svg("line", { x1: m.l, x2: W - m.r, y1: y(v), y2: y(v), class: "grid" }));
      nodes.push(svg("text", { x: m.l - 6, y: y(v) + 4, class: "ylabel" }, number.format(v)));
    }
    const ticks = Math.min(6, pts.length);
    for (let k = 0; k < ticks; k++) {
      const i = ticks > 1 ? Math.round((k * (pts.length - 1)) / (ticks - 1)) : 0;
      const anchor = ticks > 1 && k === 0 ? "start" : ticks > 1 && k === ticks - 1 ? "end" : "middle";
      nodes.push(svg("text", { x: x(i), y: H - 6, class: "xlabel", "text-anchor": anchor }, tickLabel(pts[i].t)));
    }
    for (const key of ["requests", "pageviews", "visitors"]) {
      let d = "";
      let pen = false;
      pts.forEach((p, i) => {
        if (p.held) d += `${pen ? "L" : "M"}${x(i).toFixed(1)},${y(p[key]).toFixed(1)}`;
        pen = p.held;
      });
      if (pts.length) nodes.push(svg("path", { d, class: `line ${key}` }));
      if (pts.length <= 31) pts.forEach((p, i) => { if (p.held) nodes.push(svg("circle", { cx: x(i), cy: y(p[key]), r: 2.5, class: `dot ${key}` })); });
    }
    const cursor = svg("line", { x1: 0, x2: 0, y1: m.t, y2: H - m.b, class: "cursor", visibility: "hidden" });
    nodes.push(cursor);
    chart.replaceChildren(...nodes);

    let requests = 0, pageviews = 0, peak = 0;
    for (const p of pts) {
      const tr = el("tr");
      const when = el("th", "", p.t.toLocaleString("en-GB"));
      when.dataset.value = p.t.toISOString();
      tr.append(when);
      if (p.held) {
        requests += p.requests;
        pageviews += p.pageviews;
        peak = Math.max(peak, p.visitors);
        tr.append(el("td", "", String(p.requests)), el("td", "", String(p.pageviews)), el("td", "", String(p.visitors)));
      } else {
        for (let k = 0; k < 3; k++) tr.append(el("td", "unkept", "not kept"));
      }
      rows.push(tr);
    }
    $("chart-table").tBodies[0].replaceChildren(...rows);
    const r = chartRange();
    const unkept = held.length < pts.length && body.kept_from ? ` History of this step is kept from ${new Date(body.kept_from).toLocaleString("en-GB")}; earlier steps are not shown.` : "";
    summary.textContent = `${r.label[0].toUpperCase()}${r.label.slice(1)}: ${plural(requests, "request", "requests")}, ${plural(pageviews, "page view", "page views")}; at most ${plural(peak, "visitor", "visitors")} in one step${body.approximate_visitors ? " (visitors partly estimated)" : ""}.${unkept}`;

    const hover = $("chart-hover");
    const show = (ev) => {
      const box = chart.getBoundingClientRect();
      const px = ((ev.clientX - box.left) * W) / box.width;
      const i = Math.max(0, Math.min(pts.length - 1, Math.round(((px - m.l) * (pts.length - 1)) / (W - m.l - m.r))));
      const p = pts[i];
      if (!p) return;
      cursor.setAttribute("x1", x(i));
      cursor.setAttribute("x2", x(i));
      cursor.setAttribute("visibility", "visible");
      const when = chartRange().byDay ? p.t.toLocaleDateString("en-GB") : `${p.t.toLocaleDateString("en-GB")} ${hhmm(p.t)}`;
      hover.textContent = p.held ? `${when}: ${plural(p.requests, "request", "requests")}, ${plural(p.pageviews, "page view", "page views")}, ${plural(p.visitors, "visitor", "visitors")}` : `${when}: not kept`;
    };
    chart.onmousemove = show;
    chart.onmouseleave = () => {
      cursor.setAttribute("visibility", "hidden");
      hover.textContent = "\u00a0";
    };
    drawStatus(pts, x, W);
  }

  // drawStatus draws requests by status class as stacked bars, when the
  // series has them; it hides the block otherwise.
  function drawStatus(pts, x, W) {
    const block = $("status-block");
    if (!pts.length || pts.some((p) => p.held && !p.status)) {
      block.hidden = true;
      return;
    }
    block.hidden = false;
    const chart = $("status-chart");
    const H = Math.max(chart.clientHeight, 60);
    const max = Math.max(1, ...pts.map((p) => (p.status ? p.status.reduce((a, b) => a + b, 0) : 0)));
    const bw = Math.max(1, (W - 60) / pts.length - 1);
    const nodes = [];
    pts.forEach((p, i) => {
      if (!p.status) return; // not kept
      let top = H - 4;
      p.status.forEach((n, c) => {
        if (!n) return;
        const h = (n * (H - 8)) / max;
        top -= h;
        const r = svg("rect", { x: x(i) - bw / 2, y: top, width: bw, height: h, class: `s${c + 1}` });
        r.append(svg("title", {}, `${STATUS_CLASSES[c]}: ${number.format(n)}`));
        nodes.push(r);
      });
    });
    chart.setAttribute("viewBox", `0 0 ${W} ${H}`);
    chart.replaceChildren(...nodes);
  }

  function chooseRange(range) {
    state.range = range;
    for (const b of document.querySelectorAll(".tabs button")) b.setAttribute("aria-pressed", String(b.dataset.range === range));
    if (state.dates) {
      $("from").value = "";
      $("to").value = "";
      setDates(null);
      return;
    }
    loadSeries();
  }

  // loadDay shows the top pages of the chosen day, where the daemon keeps
  // them (GET /api/v1/pages?from=D&to=D: the whole day D in the daemon's
  // --tz, from its per-day page counts).
  async function loadDay() {
    const d = state.dates;
    $("day").hidden = Boolean(d);
    $("day-title").textContent = d ? (d.from === d.to ? `Top pages on ${d.from}` : `Top pages, ${d.from} to ${d.to}`) : "Top pages on";
    const from = d ? d.from : $("day").value;
    const to = d ? d.to : from;
    const asked = `${from}/${to}`;
    const note = $("day-note");
    if (!from) return;
    const body = await getJSON("api/v1/pages", { from, to, limit: 10 });
    const now = state.dates ? `${state.dates.from}/${state.dates.to}` : `${$("day").value}/${$("day").value}`;
    if (now !== asked) return; // chosen again meanwhile
    if (!body || !Array.isArray(body.pages)) {
      $("day-pages").replaceChildren();
      note.textContent = "History of pages not available.";
      note.hidden = false;
      return;
    }
    renderPages($("day-pages"), note, body.pages);
    note.textContent = d ? "No page views in these days." : "No page views on this day.";
    if (body.kept_from) {
      note.textContent = `Pages are kept from ${new Date(body.kept_from).toLocaleDateString("en-GB")}: ${d ? "these days are" : "this day is"} not, or not whole.`;
      note.hidden = false;
    }
  }

  // ---- breakdowns ---------------------------------------------------------

  // loadBreakdowns makes a panel for each breakdown GET /api/v1/breakdowns
  // lists as on, in the order of BREAKDOWNS (one the page does not know
  // comes last, under its name); a breakdown that is off has none.
  async function loadBreakdowns() {
    const body = await getJSON("api/v1/breakdowns");
    const on = body && Array.isArray(body.breakdowns) ? body.breakdowns.filter((b) => b && typeof b.name === "string") : [];
    const known = (name) => BREAKDOWNS.findIndex((k) => k.name === name);
    const rank = (name) => (known(name) < 0 ? BREAKDOWNS.length : known(name));
    state.breakdowns = on.map((b) => ({ name: b.name, counts: b.counts, ...(BREAKDOWNS[known(b.name)] || { title: b.name, key: "Key" }) }))
      .sort((a, b) => rank(a.name) - rank(b.name));
    for (const b of state.breakdowns) b.section = breakdownPanel(b);
    $("breakdown-panels").replaceChildren(...state.breakdowns.map((b) => b.section));
    $("breakdowns").hidden = state.breakdowns.length === 0;
    loadPanels();
  }

  // breakdownPanel makes the empty panel of breakdown b.
  function breakdownPanel(b) {
    const section = el("section", "panel breakdown");
    section.dataset.breakdown = b.name;
    const head = el("div", "panel-head");
    const title = el("h2", "", b.title);
    title.id = `bd-${b.name}-title`;
    section.setAttribute("aria-labelledby", title.id);
    const csv = el("button", "csv", "CSV");
    csv.type = "button";
    csv.dataset.table = `bd-${b.name}`;
    csv.dataset.name = b.name;
    csv.title = `Download the ${b.title.toLowerCase()} as CSV`;
    head.append(title, csv);
    section.append(head);
    if (b.strip) {
      const strip = el("div", "heat");
      strip.setAttribute("role", "img");
      section.append(strip);
    }
    const table = el("table", "list keys");
    table.id = `bd-${b.name}`;
    table.append(el("caption", "sr-only", b.title), el("thead"), el("tbody"));
    const scroll = el("div", "scroll"); // the hours' 24 rows stay under the strip
    scroll.append(table);
    section.append(scroll, el("p", "note"));
    return section;
  }

  // loadPanels fills every breakdown's panel from GET
  // /api/v1/breakdowns/NAME: its top keys in the live window, with their
  // visitors, or with days chosen, in those days.
  async function loadPanels() {
    if (!state.breakdowns.length) return;
    state.panelsAt = Date.now();
    const asked = ++state.panelsAsked;
    const dates = state.dates;
    $("breakdowns-span").textContent = (dates ? (dates.from === dates.to ? `On ${dates.from}` : `From ${dates.from} to ${dates.to}`) : "In the live window") +
      (state.site ? ", of all sites" : "");
    const bodies = await Promise.all(state.breakdowns.map((b) => {
      const params = { limit: b.limit || PANEL_LIMIT };
      if (dates) Object.assign(params, dates);
      return getJSON(`api/v1/breakdowns/${encodeURIComponent(b.name)}`, params);
    }));
    if (asked !== state.panelsAsked) return; // asked again meanwhile
    state.breakdowns.forEach((b, i) => renderPanel(b, bodies[i]));
  }

  // renderPanel shows a breakdown's answer in its panel: a table of key,
  // count and, for the window, visitors; the heat strip for a time of day.
  function renderPanel(b, body) {
    const section = b.section;
    const table = section.querySelector("table");
    const note = section.querySelector(".note");
    const items = body && Array.isArray(body.items) ? body.items : [];
    const ranged = Boolean(body && body.exact !== undefined);
    const head = el("tr");
    const cols = [b.key, b.counts === "requests" ? "Requests" : "Page views"];
    if (!ranged) cols.push("Visitors");
    for (const [i, c] of cols.entries()) {
      const th = el("th", i ? "num" : "", c);
      th.scope = "col";
      head.append(th);
    }
    table.tHead.replaceChildren(head);
    table.tBodies[0].replaceChildren(...items.map((it) => {
      const tr = el("tr");
      const key = el("td", b.paths ? "key path" : "key", it.key);
      key.title = it.key;
      tr.append(key, numCell("count", it.count));
      if (!ranged) tr.append(numCell("visitors", it.visitors || 0));
      return tr;
    }));
    note.textContent = panelNote(body, items, ranged);
    note.hidden = note.textContent === "";
    if (b.strip) drawStrip(section.querySelector(".heat"), b, items);
  }

  function numCell(className, n) {
    const td = el("td", `num ${className}`, number.format(n));
    td.dataset.value = String(n);
    return td;
  }

  // panelNote says what a panel's table does not: nothing to show, counts
  // past the top keys, estimates.
  function panelNote(body, items, ranged) {
    if (!body) return "Not available.";
    const notes = [];
    if (!items.length) notes.push(ranged ? "Nothing counted in these days." : "Nothing counted in the window.");
    if (ranged && body.other > 0) notes.push(`${number.format(body.other)} more in keys not kept.`);
    if (ranged && body.exact === false) notes.push("Counts are lower bounds.");
    if (ranged && body.kept_from) notes.push(`Kept from ${new Date(body.kept_from).toLocaleDateString("en-GB")}.`);
    if (!ranged && body.visitors_approximate) notes.push("Visitors are lower bounds.");
    return notes.join(" ");
  }

  // drawStrip draws a time of day's keys in their order (00 to 23, mon to
  // sun), each cell as dark as its count is near the most.
  function drawStrip(strip, b, items) {
    const counts = new Map(items.map((it) => [it.key, it.count]));
    const max = Math.max(1, ...counts.values());
    strip.setAttribute("aria-label", `${b.title}: ${b.strip.map((k) => `${k} ${number.format(counts.get(k) || 0)}`).join(", ")}`);
    strip.replaceChildren(...b.strip.map((k) => {
      const n = counts.get(k) || 0;
      const cell = el("span", "cell");
      const fill = el("span", "fill");
      fill.style.opacity = String(n ? 0.15 + (0.85 * n) / max : 0); // CSSOM, allowed by the policy
      cell.title = `${k}: ${number.format(n)}`;
      const box = el("span", "box");
      box.append(fill);
      cell.append(box, el("span", "label", k));
      return cell;
    }));
  }

  // ---- a range of days ------------------------------------------------------

  // chooseDates applies the from and to inputs once both are given and
  // from is not after to: every panel, the chart and the top pages then
  // answer for those days. Either emptied, the page is back to the window
  // and the tabs.
  function chooseDates() {
    const from = $("from").value;
    const to = $("to").value;
    const error = $("dates-error");
    let problem = "";
    if (from && to && from > to) problem = "The first day is after the last: choose a first day on or before the last.";
    else if (from && to && (Date.parse(to) - Date.parse(from)) / 86400000 >= MAX_DAYS) problem = `Choose at most ${MAX_DAYS} days.`;
    error.textContent = problem;
    error.hidden = problem === "";
    for (const id of ["from", "to"]) $(id).setAttribute("aria-invalid", String(problem !== ""));
    if (problem) return;
    if (from && to) setDates({ from, to });
    else if (state.dates) setDates(null);
  }

  function setDates(dates) {
    state.dates = dates;
    for (const b of document.querySelectorAll(".tabs button")) b.setAttribute("aria-pressed", String(!dates && b.dataset.range === state.range));
    loadSeries();
    loadPanels();
    loadDay();
  }

  // ---- CSV ----------------------------------------------------------------

  // downloadCSV saves a table as CSV, made here from the table's cells: a
  // number as its value (data-value), not as shown; the header row first.
  function downloadCSV(table, name) {
    const rows = [...table.querySelectorAll("tr")].map((tr) => [...tr.cells].map((c) => (c.dataset.value !== undefined ? c.dataset.value : c.textContent)));
    const text = rows.map((r) => r.map(csvField).join(",")).join("\r\n") + "\r\n";
    const a = el("a");
    a.href = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
    const span = state.dates ? `${state.dates.from}_${state.dates.to}` : "window";
    a.download = `logtally-${name}-${span}.csv`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60000);
  }

  // csvField quotes a field as RFC 4180 does where it must. Keys come from
  // requests (paths, campaigns): one that a spreadsheet would take for a
  // formula (=, +, -, @, a tab or a carriage return first) is written after
  // a ', so that it stays text.
  function csvField(v) {
    let s = String(v);
    if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  }

  // ---- the daemon's state -------------------------------------------------

  async function loadStatus() {
    const st = await getJSON("api/v1/status");
    if (!st) {
      $("files-note").textContent = "Status not available.";
      $("files-note").hidden = false;
      return;
    }
    const files = (st.files || []).map((f) => {
      const tr = el("tr");
      const name = el("td", "path", f.path);
      name.title = `${f.path} (${f.fingerprint})`;
      const lag = el("td", "num", bytes(f.lag_bytes));
      if (f.lag_bytes > 0) lag.classList.add("warn");
      tr.append(name, el("td", `state ${f.state}`, f.state), el("td", "num", bytes(f.offset)), lag);
      return tr;
    });
    $("files").tBodies[0].replaceChildren(...files);
    $("files-note").textContent = "No files are followed.";
    $("files-note").hidden = files.length > 0;

    const s = st.store || {};
    const facts = [["State", s.state || "?"], ["Commits", number.format(s.commits || 0)],
      ["Last commit", s.last_commit && !s.last_commit.startsWith("0001") ? clock(new Date(s.last_commit)) : "none yet"], ["File", s.path || "?"]];
    if (s.error) facts.push(["Error", s.error]);
    $("store").replaceChildren(...facts.flatMap(([k, v]) => {
      const dd = el("dd", k === "State" ? `state ${v}` : "", v);
      return [el("dt", "", k), dd];
    }));

    const reasons = Object.entries((st.lines && st.lines.rejected_by_reason) || {}).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    $("reasons").tBodies[0].replaceChildren(...reasons.map(([k, n]) => {
      const tr = el("tr");
      tr.append(el("td", "", k), el("td", "num", number.format(n)));
      return tr;
    }));
    $("reasons-note").hidden = reasons.length > 0;
    $("samples").replaceChildren(...(st.rejected_samples || []).slice(-3).reverse().map((r) => {
      const li = el("li");
      li.append(el("span", "reason", r.reason), el("code", "", r.line));
      return li;
    }));
    const lines = st.lines || {};
    $("foot").textContent = `logtally ${st.version || ""} · up ${duration(Math.max(1, Math.round(st.uptime_seconds || 0)))} · ${plural(lines.read || 0, "line", "lines")} read, ${number.format(lines.parsed || 0)} parsed, ${number.format(lines.rejected || 0)} rejected`;
  }

  // ---- sites and the widget -----------------------------------------------

  // loadSites shows the site selector when the daemon counts several sites
  // (GET /api/v1/sites lists two or more); "All sites" is the first choice.
  async function loadSites() {
    const body = await getJSON("api/v1/sites");
    const list = body && Array.isArray(body.sites) ? body.sites : [];
    const names = list.map((s) => s && s.site).filter((s) => typeof s === "string").sort();
    if (names.length < 2) return;
    const select = $("site");
    const all = el("option", "", "All sites");
    all.value = "";
    select.replaceChildren(all, ...names.map((n) => {
      const o = el("option", "", n);
      o.value = n;
      return o;
    }));
    $("site-picker").hidden = false;
    select.addEventListener("change", () => {
      state.site = select.value;
      state.windowEnd = null;
      state.livePages = "";
      connect();
    });
  }

  async function loadWidget() {
    try {
      const r = await fetch(new URL("ui/widget.html", document.baseURI));
      if (r.ok) $("widget").textContent = await r.text();
    } catch (e) { /* the section stays empty */ }
    $("copy").addEventListener("click", async () => {
      const text = $("widget").textContent;
      try {
        await navigator.clipboard.writeText(text);
        $("copy").textContent = "Copied";
      } catch (e) {
        // No clipboard access (not a secure context): select it to copy by hand.
        const range = document.createRange();
        range.selectNodeContents($("widget"));
        const sel = window.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
        $("copy").textContent = "Selected: press Ctrl+C";
      }
      setTimeout(() => { $("copy").textContent = "Copy"; }, 2000);
    });
  }

  // ---- start ----------------------------------------------------------------

  for (const b of document.querySelectorAll(".tabs button")) b.addEventListener("click", () => chooseRange(b.dataset.range));
  for (const id of ["from", "to"]) $(id).addEventListener("change", chooseDates);
  document.addEventListener("click", (ev) => {
    const b = ev.target.closest && ev.target.closest("button.csv");
    if (b) downloadCSV($(b.dataset.table), b.dataset.name);
  });
  $("day").addEventListener("change", () => {
    state.dayChosen = true;
    loadDay();
  });
  let resized = 0;
  window.addEventListener("resize", () => {
    clearTimeout(resized);
    resized = setTimeout(drawSeries, 100);
  });
  connect();
  loadSites();
  loadStatus();
  setInterval(loadStatus, STATUS_MS);
  setInterval(() => {
    if ((state.windowEnd || state.dates) && Date.now() - state.seriesAt >= chartRange().refresh) loadSeries();
    if (state.dates && Date.now() - state.panelsAt >= 60000) loadPanels(); // new days are committed, not streamed
  }, 5000);
  setInterval(() => { if (state.dayChosen || state.windowEnd || state.dates) loadDay(); }, 60000);
  loadBreakdowns();
  loadWidget();
})();
