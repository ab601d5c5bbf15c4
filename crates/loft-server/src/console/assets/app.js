// Loft console: plain JavaScript over Loft's JSON routes (/_loft/...). No build step.
"use strict";

const REFRESH_MS = 2000;
const state = { queue: null, timer: null, armed: new Map() };

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
  return data;
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

// ----- queues

function queueRow(q) {
  const tr = el("tr", { dataset: { queue: q.name } },
    el("td", { class: "name" }, el("code", {}, q.name), q.fifo ? " " : null, q.fifo ? el("span", { class: "badge" }, "FIFO") : null),
    el("td", { class: "num visible" }),
    el("td", { class: "num in_flight" }),
    el("td", { class: "num delayed" }),
    el("td", { class: "dlq" }),
    el("td", { class: "actions" },
      el("button", { type: "button", class: "browse", onclick: () => selectQueue(q.name) }, "Browse"),
      " ",
      el("button", { type: "button", class: "danger purge", onclick: (ev) => purge(q.name, ev.target) }, "Purge"),
      " ",
      el("button", { type: "button", class: "redrive", hidden: true, onclick: () => redrive(q.name) }, "Redrive")));
  return tr;
}

function renderQueues(list) {
  const tbody = $("#queues tbody");
  if (list.length === 0) {
    tbody.replaceChildren(el("tr", { class: "empty" }, el("td", { colspan: 6 }, "No queues yet.")));
    return;
  }
  const existing = new Map([...tbody.querySelectorAll("tr[data-queue]")].map((tr) => [tr.dataset.queue, tr]));
  const rows = list.map((q) => {
    const tr = existing.get(q.name) || queueRow(q);
    setCell(tr.querySelector(".visible"), q.visible);
    setCell(tr.querySelector(".in_flight"), q.in_flight);
    setCell(tr.querySelector(".delayed"), q.delayed);
    const dlq = tr.querySelector(".dlq");
    const dlqText = q.dead_letter_target
      ? "→ " + q.dead_letter_target + " after " + q.max_receive_count + " receives"
      : q.dead_letter_sources.length ? "DLQ of " + q.dead_letter_sources.join(", ") : "";
    if (dlq.textContent !== dlqText) dlq.textContent = dlqText;
    tr.querySelector(".redrive").hidden = q.dead_letter_sources.length === 0;
    tr.classList.toggle("selected", q.name === state.queue);
    return tr;
  });
  tbody.replaceChildren(...rows);
}

async function refreshQueues() {
  renderQueues(await api("GET", "/_loft/queues"));
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

function selectQueue(name) {
  state.queue = name;
  history.replaceState(null, "", "#queue=" + encodeURIComponent(name));
  $("#browser").hidden = false;
  $("#browser-queue").textContent = name;
  for (const tr of document.querySelectorAll("#queues tr[data-queue]")) {
    tr.classList.toggle("selected", tr.dataset.queue === name);
  }
  refreshMessages().catch((e) => say(e.message, "error"));
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
  const head = el("h3", {}, el("code", {}, t.name), " ", el("small", {}, t.arn));
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
  const m = /^#queue=(.+)$/.exec(location.hash);
  if (m) selectQueue(decodeURIComponent(m[1]));
  refresh();
  state.timer = setInterval(refresh, REFRESH_MS);
}

start();
