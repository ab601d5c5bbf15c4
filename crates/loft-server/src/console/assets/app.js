// Loft console: plain JavaScript over Loft's JSON routes (/_loft/...). No build step.
"use strict";

const REFRESH_MS = 2000;
const state = { queue: null, timer: null, armed: new Map(), filter: "", offset: 0, filterTimer: null, histories: new Map() };

const $ = (sel) => document.querySelector(sel);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

async function api(method, path, body) {
  return (await apiWithHeaders(method, path, body)).data;
}

async function apiWithHeaders(method, path, body) {
  // x-loft-console: with credentials configured, Loft takes a Basic-authenticated POST
  // only with this header, which a form posted from another site cannot carry.
  const init = { method, headers: { "x-loft-console": "1" } };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (_) { data = text; }
  if (resp.status === 401) {
    throw new Error("sign-in required: reload the page and sign in with one of Loft's access key ids and its secret");
  }
  if (!resp.ok) {
    const msg = data && data.error ? (data.code ? data.code + ": " : "") + data.error : resp.status + " " + text;
    throw new Error(msg);
  }
  return { data, headers: resp.headers };
}

function say(text, kind) {
  const s = $("#status");
  s.textContent = text;
  s.className = kind || "";
}

function time(ms) {
  if (ms === null || ms === undefined) return "";
  const d = new Date(ms);
  return d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

function setCell(td, value) {
  const text = String(value);
  if (td.textContent !== text) {
    const changed = td.textContent !== "";
    td.textContent = text;
    if (changed) {
      td.classList.remove("count-changed");
      void td.offsetWidth;
      td.classList.add("count-changed");
    }
  }
}

// ----- charts: hand-drawn SVG sparklines over the samples Loft keeps (GET /_loft/queues'
// and /_loft/topics' "history": per node, since it started, the last 120 samples)

const SVG_NS = "http://www.w3.org/2000/svg";

function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function fmt(n) {
  if (n === null || n === undefined) return "–";
  if (Number.isInteger(n)) return n.toLocaleString("en-US");
  return n < 10 ? n.toFixed(2) : n.toFixed(1);
}

function span(t) {
  if (t.length < 2) return "one sample";
  const s = Math.round((t[t.length - 1] - t[0]) / 1000);
  return s < 120 ? "last " + s + " s" : "last " + Math.round(s / 60) + " min";
}

// A chart of `panes` stacked top to bottom, each {series: [{values, cls}]} on its own
// scale (0 to its largest value); x is the sample time. Gaps (null) break a line.
function sparkline(t, panes, width, height, title) {
  const box = svg("svg", { class: "spark", width, height, viewBox: "0 0 " + width + " " + height, role: "img" });
  box.append(svg("title", {}, title));
  const n = t.length;
  let points = 0;
  if (n === 0) {
    box.append(svg("text", { x: 2, y: height / 2 + 4, class: "spark-empty" }, "no samples yet"));
    box.dataset.points = "0";
    return box;
  }
  const t0 = t[0], tSpan = Math.max(1, t[n - 1] - t0);
  const gap = 3;
  const paneH = (height - gap * (panes.length - 1)) / panes.length;
  panes.forEach((pane, i) => {
    const top = i * (paneH + gap);
    const max = Math.max(1, ...pane.series.flatMap((s) => s.values.filter((v) => v !== null)));
    box.append(svg("line", { x1: 0, x2: width, y1: top + paneH - 0.5, y2: top + paneH - 0.5, class: "spark-base" }));
    for (const s of pane.series) {
      let run = [];
      const runs = [];
      s.values.forEach((v, j) => {
        if (v === null || v === undefined) { if (run.length) runs.push(run); run = []; return; }
        const x = n === 1 ? width - 1 : ((t[j] - t0) / tSpan) * (width - 2) + 1;
        const y = top + paneH - 1 - (v / max) * (paneH - 2);
        run.push(x.toFixed(1) + "," + y.toFixed(1));
        points++;
      });
      if (run.length) runs.push(run);
      for (const r of runs) {
        if (r.length === 1) {
          const [x, y] = r[0].split(",");
          box.append(svg("circle", { cx: x, cy: y, r: 1.5, class: "spark-dot " + s.cls }));
        } else {
          box.append(svg("polyline", { points: r.join(" "), class: "spark-line " + s.cls }));
        }
      }
    }
  });
  box.dataset.points = String(points);
  return box;
}

function last(values) {
  for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null) return values[i];
  return null;
}

function queueChart(h, width, height) {
  const title = h.t.length === 0
    ? "No samples yet: this node samples every queue periodically (--console-sample-interval)."
    : "Visible " + fmt(last(h.visible)) + ", in flight " + fmt(last(h.in_flight)) +
      "; sent " + fmt(last(h.sent_per_s)) + "/s, received " + fmt(last(h.received_per_s)) +
      "/s (" + span(h.t) + ", " + h.t.length + " samples of this node)";
  return sparkline(h.t, [
    { series: [{ values: h.visible, cls: "s-visible" }, { values: h.in_flight, cls: "s-inflight" }] },
    { series: [{ values: h.sent_per_s, cls: "s-sent" }, { values: h.received_per_s, cls: "s-received" }] },
  ], width, height, title);
}

function topicChart(h, width, height) {
  const title = h.t.length === 0
    ? "No samples yet."
    : "Published " + fmt(last(h.published_per_s)) + "/s, pending deliveries " + fmt(last(h.pending)) +
      " (" + span(h.t) + ", " + h.t.length + " samples of this node)";
  return sparkline(h.t, [
    { series: [{ values: h.published_per_s, cls: "s-sent" }] },
    { series: [{ values: h.pending, cls: "s-inflight" }] },
  ], width, height, title);
}

// ----- queues

const PAGE_SIZE = 100;

function queueRow(q) {
  const tr = el("tr", { dataset: { queue: q.name } },
    el("td", { class: "name", title: q.name }, q.fifo ? el("span", { class: "badge" }, "FIFO") : null, q.fifo ? " " : null, el("code", {}, q.name)),
    el("td", { class: "num visible" }),
    el("td", { class: "num in_flight" }),
    el("td", { class: "num delayed" }),
    el("td", { class: "chart" }),
    el("td", { class: "dlq" }, el("div", { class: "dlq-box" }, el("span", { class: "dlq-text" }), el("span", { class: "dlq-depth", hidden: true }))),
    el("td", { class: "actions" },
      el("button", { type: "button", class: "browse", onclick: () => selectQueue(q.name) }, "Browse"),
      " ",
      el("button", { type: "button", class: "danger purge", onclick: (ev) => purge(q.name, ev.target) }, "Purge"),
      " ",
      el("button", { type: "button", class: "redrive", hidden: true, onclick: () => redrive(q.name) }, "Redrive")));
  return tr;
}

function renderQueues(list, total) {
  const tbody = $("#queues tbody");
  state.histories = new Map();
  const from = total === 0 ? 0 : Math.min(state.offset + 1, total);
  const to = state.offset + list.length;
  $("#page-info").textContent = total === 0 ? "" : fmt(from) + "–" + fmt(to) + " of " + fmt(total);
  $("#page-prev").disabled = state.offset === 0;
  $("#page-next").disabled = to >= total;
  $("#pager").hidden = total <= PAGE_SIZE && state.offset === 0;
  if (list.length === 0) {
    const text = state.filter ? "No queue name contains “" + state.filter + "”." : "No queues yet.";
    tbody.replaceChildren(el("tr", { class: "empty" }, el("td", { colspan: 7 }, text)));
    return;
  }
  const existing = new Map([...tbody.querySelectorAll("tr[data-queue]")].map((tr) => [tr.dataset.queue, tr]));
  const rows = list.map((q) => {
    state.histories.set(q.name, q.history);
    const tr = existing.get(q.name) || queueRow(q);
    setCell(tr.querySelector(".visible"), fmt(q.visible));
    setCell(tr.querySelector(".in_flight"), fmt(q.in_flight));
    setCell(tr.querySelector(".delayed"), fmt(q.delayed));
    tr.querySelector(".chart").replaceChildren(queueChart(q.history, 128, 30));
    const dlq = tr.querySelector(".dlq");
    const text = dlq.querySelector(".dlq-text");
    const depth = dlq.querySelector(".dlq-depth");
    let dlqText = "", dlqTitle = "";
    if (q.dead_letter_target) {
      dlqText = "→ " + q.dead_letter_target;
      dlqTitle = "Dead-letter queue " + q.dead_letter_target + " after " + q.max_receive_count + " receives";
      if (q.dead_letter_depth !== null) dlqTitle += "; " + fmt(q.dead_letter_depth) + " visible messages in it";
    } else if (q.dead_letter_sources.length) {
      dlqText = "DLQ of " + q.dead_letter_sources.join(", ");
      dlqTitle = dlqText;
    }
    if (text.textContent !== dlqText) text.textContent = dlqText;
    dlq.title = dlqTitle;
    const hasDepth = q.dead_letter_target && q.dead_letter_depth !== null;
    depth.hidden = !hasDepth;
    if (hasDepth) {
      depth.textContent = fmt(q.dead_letter_depth);
      depth.classList.toggle("nonzero", q.dead_letter_depth > 0);
    }
    tr.querySelector(".redrive").hidden = q.dead_letter_sources.length === 0;
    tr.classList.toggle("selected", q.name === state.queue);
    return tr;
  });
  tbody.replaceChildren(...rows);
}

function queuesQuery() {
  return "?limit=" + PAGE_SIZE + "&offset=" + state.offset +
    (state.filter ? "&filter=" + encodeURIComponent(state.filter) : "");
}

async function refreshQueues() {
  const query = queuesQuery();
  const { data, headers } = await apiWithHeaders("GET", "/_loft/queues" + query);
  // A periodic refresh that left before the filter or the page changed answers for a list
  // no longer shown: drawing it would put the old list back over the new one.
  if (query !== queuesQuery()) return;
  const total = Number(headers.get("x-total-count") || data.length);
  if (data.length === 0 && state.offset > 0 && total > 0) {
    // Queues went away under this page: show the last page there is.
    state.offset = Math.floor((total - 1) / PAGE_SIZE) * PAGE_SIZE;
    return refreshQueues();
  }
  $("#queues-count").textContent = state.filter ? "" : "(" + fmt(total) + ")";
  renderQueues(data, total);
}

function setFilter(text) {
  state.filter = text.trim();
  state.offset = 0;
  refreshQueues().catch((e) => say(e.message, "error"));
}

function turnPage(delta) {
  state.offset = Math.max(0, state.offset + delta * PAGE_SIZE);
  refreshQueues().catch((e) => say(e.message, "error"));
}

async function purge(name, button) {
  // Two clicks: the first arms the button for 3 seconds, the second purges.
  if (!state.armed.get(name)) {
    state.armed.set(name, true);
    button.textContent = "Confirm purge";
    setTimeout(() => { state.armed.delete(name); button.textContent = "Purge"; }, 3000);
    return;
  }
  state.armed.delete(name);
  button.textContent = "Purge";
  try {
    await api("POST", "/_loft/queues/" + encodeURIComponent(name) + "/purge");
    say("Purged " + name + ".", "ok");
  } catch (e) {
    say("Purge failed: " + e.message, "error");
  }
  await refresh();
}

async function redrive(name) {
  try {
    await api("POST", "/_loft/queues/" + encodeURIComponent(name) + "/redrive");
    say("Redrive of " + name + " started: messages move back to their source queues.", "ok");
  } catch (e) {
    say("Redrive failed: " + e.message, "error");
  }
  await refresh();
}

// ----- message browser

// The selected queue's chart, larger, with the largest value of each pane. Its history
// comes with the queue listing; a queue not on the page shown is looked up by name.
async function refreshQueueChart() {
  if (!state.queue) return;
  const name = state.queue;
  let h = state.histories.get(name);
  if (!h) {
    const found = await api("GET", "/_loft/queues?limit=1000&filter=" + encodeURIComponent(name));
    const q = found.find((q) => q.name === name);
    h = q ? q.history : null;
  }
  if (name !== state.queue) return;
  const box = $("#browser-chart .chart-box");
  if (!h) { box.replaceChildren(); $("#browser-chart-note").textContent = ""; return; }
  box.replaceChildren(queueChart(h, 640, 120));
  const peak = (v) => fmt(Math.max(0, ...v.filter((x) => x !== null)));
  $("#browser-chart-note").textContent = h.t.length === 0 ? "no samples yet" :
    "top: up to " + peak(h.visible.concat(h.in_flight)) + " messages; bottom: up to " +
    peak(h.sent_per_s.concat(h.received_per_s)) + "/s; " + span(h.t) + " (" + h.t.length + " samples of this node)";
}

function selectQueue(name) {
  state.queue = name;
  history.replaceState(null, "", "#queue=" + encodeURIComponent(name));
  $("#browser").hidden = false;
  $("#browser-queue").textContent = name;
  for (const tr of document.querySelectorAll("#queues tr[data-queue]")) {
    tr.classList.toggle("selected", tr.dataset.queue === name);
  }
  refreshMessages().catch((e) => say(e.message, "error"));
  refreshQueueChart().catch((e) => say(e.message, "error"));
}

function attributesText(attrs) {
  return Object.entries(attrs || {})
    .map(([k, v]) => k + " (" + v.DataType + ") = " + (v.StringValue !== undefined ? v.StringValue : "[binary " + v.BinaryValue + "]"))
    .join("\n");
}

async function refreshMessages() {
  if (!state.queue) return;
  const name = state.queue;
  let page;
  try {
    page = await api("GET", "/_loft/queues/" + encodeURIComponent(name) + "/messages?limit=50");
  } catch (e) {
    if (/NonExistentQueue|QueueDoesNotExist/.test(e.message)) {
      state.queue = null;
      $("#browser").hidden = true;
      return;
    }
    throw e;
  }
  if (name !== state.queue) return;
  const rows = page.messages.map((m) => el("tr", { dataset: { messageId: m.message_id } },
    el("td", {}, el("code", {}, m.message_id)),
    el("td", {}, el("span", { class: "badge " + m.state }, m.state.replace("_", " "))),
    el("td", { class: "num" }, m.receive_count),
    el("td", {}, time(m.sent_timestamp)),
    el("td", { class: "body" }, m.body),
    el("td", { class: "body" }, attributesText(m.message_attributes))));
  if (rows.length === 0) rows.push(el("tr", { class: "empty" }, el("td", { colspan: 6 }, "The queue is empty.")));
  $("#messages tbody").replaceChildren(...rows);
  $("#messages-more").hidden = page.next === null;
}

async function send(ev) {
  ev.preventDefault();
  if (!state.queue) return;
  const body = { body: $("#send-body").value };
  const group = $("#send-group").value.trim();
  if (group) body.group_id = group;
  const delay = $("#send-delay").value.trim();
  if (delay) body.delay_seconds = Number(delay);
  if (state.queue.endsWith(".fifo") && !body.group_id) body.group_id = "console";
  if (state.queue.endsWith(".fifo")) body.dedup_id = String(Date.now()) + Math.random().toString(16).slice(2, 8);
  try {
    const out = await api("POST", "/_loft/queues/" + encodeURIComponent(state.queue) + "/messages", body);
    say("Sent " + out.message_id + " to " + state.queue + ".", "ok");
    $("#send-body").value = "";
  } catch (e) {
    say("Send failed: " + e.message, "error");
  }
  await refresh();
}

// ----- topics and recorded messages

function subscriptionRow(s) {
  const options = Object.entries(s.attributes)
    .filter(([k]) => !k.startsWith("Loft"))
    .map(([k, v]) => k + "=" + v)
    .join(", ");
  const pending = s.pending_deliveries
    ? el("span", { class: "badge pending" }, s.pending_deliveries + " (" + s.max_attempts + " attempts)")
    : "0";
  return el("tr", { dataset: { subscription: s.arn } },
    el("td", {}, s.protocol),
    el("td", {}, el("code", {}, s.endpoint)),
    el("td", {}, s.confirmed ? "confirmed" : el("span", { class: "badge pending" }, "pending confirmation")),
    el("td", {}, options),
    el("td", { class: "num pending" }, pending),
    el("td", {}, s.last_error ? el("span", { class: "badge error" }, s.last_error) : ""));
}

function topicBlock(t) {
  const head = el("div", { class: "topic-head" },
    el("h3", { title: t.name }, el("code", {}, t.name), " ", el("small", {}, t.arn)),
    el("div", { class: "topic-chart" }, el("span", { class: "legend" }, el("i", { class: "s-sent" }), "published/s ", el("i", { class: "s-inflight" }), "pending"), topicChart(t.history, 160, 30)));
  if (t.subscriptions.length === 0) {
    return el("div", { class: "topic", dataset: { topic: t.name } }, head, el("p", { class: "empty" }, "No subscriptions."));
  }
  const headers = ["Protocol", "Endpoint", "State", "Options", "Pending deliveries", "Last error"];
  const table = el("table", { class: "subscriptions" },
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, t.subscriptions.map(subscriptionRow)));
  return el("div", { class: "topic", dataset: { topic: t.name } }, head, table);
}

function renderTopics(list) {
  const box = $("#topics");
  if (list.length === 0) {
    box.replaceChildren(el("p", { class: "empty" }, "No topics yet."));
    return;
  }
  box.replaceChildren(...list.map(topicBlock));
}

async function refreshTopics() {
  renderTopics(await api("GET", "/_loft/topics"));
}

function lastPart(arn) {
  return arn.split(":").pop();
}

async function refreshMappings() {
  const list = await api("GET", "/_loft/mappings");
  const rows = list.map((m) => {
    const options = [];
    if (m.batching_window_seconds) options.push("window " + m.batching_window_seconds + " s");
    if (m.function_response_types.length) options.push(m.function_response_types.join(", "));
    if (m.filters.length) options.push(m.filters.length + " filter(s)");
    if (m.maximum_concurrency) options.push("concurrency " + m.maximum_concurrency);
    const stateClass = m.state === "Enabled" ? "badge visible" : "badge pending";
    return el("tr", { dataset: { mapping: m.uuid } },
      el("td", {}, el("code", {}, lastPart(m.queue_arn))),
      el("td", {}, el("code", {}, lastPart(m.function_arn))),
      el("td", {}, el("span", { class: stateClass }, m.state)),
      el("td", {}, m.poller),
      el("td", { class: "num" }, String(m.batch_size)),
      el("td", {}, options.join("; ")));
  });
  if (rows.length === 0) rows.push(el("tr", { class: "empty" }, el("td", { colspan: 6 }, "No event source mappings.")));
  $("#mappings tbody").replaceChildren(...rows);
}

async function refreshRecorded() {
  const list = await api("GET", "/_loft/sns/messages?limit=50");
  const rows = list.map((m) => el("tr", {},
    el("td", {}, m.timestamp),
    el("td", {}, m.protocol),
    el("td", {}, el("code", {}, m.endpoint)),
    el("td", {}, m.topic_arn || ""),
    el("td", {}, m.subject || ""),
    el("td", { class: "body" }, m.message)));
  if (rows.length === 0) rows.push(el("tr", { class: "empty" }, el("td", { colspan: 6 }, "Nothing recorded yet.")));
  $("#recorded tbody").replaceChildren(...rows);
}

async function clearRecorded(button) {
  // Two clicks, as for a purge: the first arms the button for 3 seconds.
  if (!state.armed.get("#recorded")) {
    state.armed.set("#recorded", true);
    button.textContent = "Confirm clear";
    setTimeout(() => { state.armed.delete("#recorded"); button.textContent = "Clear recorded messages"; }, 3000);
    return;
  }
  state.armed.delete("#recorded");
  button.textContent = "Clear recorded messages";
  try {
    const out = await api("DELETE", "/_loft/sns/messages");
    say("Cleared " + out.deleted + " recorded messages.", "ok");
  } catch (e) {
    say("Clear failed: " + e.message, "error");
  }
  await refresh();
}

// ----- refresh loop

async function refresh() {
  try {
    await Promise.all([refreshQueues(), refreshMessages(), refreshTopics(), refreshMappings(), refreshRecorded()]);
    await refreshQueueChart();
    $("#clock").textContent = "updated " + time(Date.now());
    document.body.dataset.refreshed = String(Date.now());
  } catch (e) {
    say("Cannot reach Loft: " + e.message, "error");
  }
}

function start() {
  $("#send-form").addEventListener("submit", send);
  $("#refresh-messages").addEventListener("click", () => refreshMessages().catch((e) => say(e.message, "error")));
  $("#clear-recorded").addEventListener("click", (e) => clearRecorded(e.currentTarget));
  $("#queue-filter").addEventListener("input", (e) => {
    clearTimeout(state.filterTimer);
    state.filterTimer = setTimeout(() => setFilter(e.target.value), 150);
  });
  $("#page-prev").addEventListener("click", () => turnPage(-1));
  $("#page-next").addEventListener("click", () => turnPage(1));
  const m = /^#queue=(.+)$/.exec(location.hash);
  if (m) selectQueue(decodeURIComponent(m[1]));
  refresh();
  state.timer = setInterval(refresh, REFRESH_MS);
}

start();
