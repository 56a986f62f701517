// The explorer's page. Every value from the output is written as text (textContent), never
// as HTML: crawl pages carry scripts. Lists come a page at a time from the JSON API.
"use strict";

const token = new URLSearchParams(location.search).get("token");
const state = { docPage: 0, clPage: 0, size: 25, filters: {}, finished: undefined };

async function api(route, params = {}) {
  const q = new URLSearchParams(params);
  const headers = token ? { Authorization: "Bearer " + token } : {};
  const res = await fetch(route + "?" + q.toString(), { headers });
  const body = await res.json();
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function fmt(n) { return typeof n === "number" ? n.toLocaleString("en-US") : (n ?? ""); }

function table(id, headers, rows) {
  const t = document.getElementById(id);
  t.replaceChildren();
  const head = el("tr");
  headers.forEach((h) => head.append(el("th", h)));
  t.append(head);
  rows.forEach((cells) => {
    const tr = el("tr");
    cells.forEach((c) => {
      if (c instanceof Node) { const td = el("td"); td.append(c); tr.append(td); }
      else tr.append(el("td", fmt(c), typeof c === "number" ? "n" : ""));
    });
    t.append(tr);
  });
  return t;
}

function filterLink(label, filters) {
  const a = el("a", label, "filter");
  a.addEventListener("click", () => { setFilters(filters); show("documents"); });
  return a;
}

function show(view) {
  for (const v of ["overview", "documents", "clusters"]) {
    document.getElementById(v).hidden = v !== view;
    document.getElementById("tab-" + v).classList.toggle("active", v === view);
  }
}

async function status() {
  const s = await api("/api/status");
  document.getElementById("output").textContent = s.output || "";
  const c = s.counts || {};
  const rejected = Object.values(c.rejected || {}).reduce((a, b) => a + b, 0);
  let line = `read ${fmt(c.read)} = kept ${fmt(c.kept)} + rejected ${fmt(rejected)}` +
    ` · ${fmt(s.inputs)} input(s) · finished ${s.finished || "?"}`;
  if (s.serve) {
    line = `serving: ${s.serve.state}; ${fmt(s.serve.files_seen)} file(s) seen, ` +
      `${fmt(s.serve.files_done)} curated, ${fmt(s.serve.cycles)} cycle(s)` +
      (s.serve.last_error ? `; last error: ${s.serve.last_error}` : "") + " · " + line;
  }
  document.getElementById("status").textContent = line;
  if (s.finished && s.finished !== state.finished) {  // a (new) finished run: its views
    state.finished = s.finished;
    await Promise.all([overview(), facets()]);
  }
}

async function overview() {
  const d = await api("/api/summary");
  table("funnel", ["records", "", "reaching"], d.funnel.map((f) => [f.count, f.label, f.stage]));
  const reasons = Object.entries(d.rejections).sort((a, b) => b[1] - a[1]);
  table("reasons", ["stage:reason", "records"],
    reasons.map(([k, n]) => [filterLink(k, { verdict: k }), n]));
  const langs = Object.entries(d.languages || {}).sort((a, b) => (b[1].docs || 0) - (a[1].docs || 0));
  table("languages", ["language", "documents", "past langid"],
    langs.map(([k, v]) => [filterLink(k, { lang: k }), v.docs, v.kept]));
  const sources = Object.entries(d.sources || {});
  table("sources", ["source", "documents", "tokens"],
    sources.map(([k, v]) => [filterLink(k, { source: k, verdict: "kept" }), v.docs_after, v.tokens_after]));
}

function resetOptions(id, keep) {
  const select = document.getElementById(id);
  while (select.options.length > keep) select.remove(keep);
}

async function facets() {
  const f = await api("/api/facets");
  resetOptions("f-verdict", 3);
  resetOptions("f-lang", 1);
  resetOptions("f-source", 1);
  const verdict = document.getElementById("f-verdict");
  f.verdicts.forEach((v) => { const o = el("option", `${v.verdict} (${fmt(v.n)})`); o.value = v.verdict; verdict.append(o); });
  const lang = document.getElementById("f-lang");
  f.languages.forEach((v) => { const o = el("option", `${v.lang} (${fmt(v.n)})`); o.value = v.lang; lang.append(o); });
  const source = document.getElementById("f-source");
  f.sources.forEach((v) => { const o = el("option", `${v.source} (${fmt(v.kept)})`); o.value = v.source; source.append(o); });
}

function setFilters(filters) {
  const form = document.getElementById("filters");
  for (const name of ["verdict", "lang", "source", "url", "text"]) form.elements[name].value = filters[name] || "";
  state.filters = filters;
  state.docPage = 0;
  documents().catch(report);
}

async function documents() {
  const d = await api("/api/documents", { ...state.filters, page: state.docPage, size: state.size });
  document.getElementById("doc-count").textContent = `${fmt(d.total)} record(s)`;
  const pages = Math.max(1, Math.ceil(d.total / d.size));
  document.getElementById("doc-page").textContent = `page ${d.page + 1} of ${fmt(pages)}`;
  document.getElementById("doc-prev").disabled = d.page === 0;
  document.getElementById("doc-next").disabled = d.page + 1 >= pages;
  const t = table("doc-list", ["url", "verdict", "language", "source", "chars", "text"], []);
  d.rows.forEach((r) => {
    const tr = el("tr", null, "row");
    tr.dataset.pos = r.crawl_pos;
    tr.append(el("td", r.url), el("td", r.verdict, r.verdict === "kept" ? "verdict-kept" : "verdict-drop"),
      el("td", r.lang), el("td", r.source), el("td", fmt(r.chars), "n"), el("td", r.snippet, "snippet"));
    tr.addEventListener("click", () => openDocument(r.crawl_pos));
    t.append(tr);
  });
}

async function openDocument(pos) {
  const d = await api("/api/document", { pos, page_text: "1" });
  document.getElementById("doc").hidden = false;
  document.getElementById("doc-url").textContent = d.url || d.doc_id;
  const facts = [["verdict", d.verdict], ["detail", d.ledger ? d.ledger.detail : ""],
    ["id", d.kept ? d.kept.id : d.doc_id], ["language", `${d.lang ?? ""} ${d.lang_score ? "(" + d.lang_score.toFixed(3) + ")" : ""}`],
    ["source", d.kept ? d.kept.source : ""], ["extractor", d.extractor], ["charset", d.charset],
    ["archive", `${d.warc_file} @ ${d.warc_offset}`], ["date", d.warc_date], ["HTTP", d.http_status],
    ["failed rules", (d.failed_rules || []).join(", ")]];
  table("doc-facts", ["", ""], facts.filter(([, v]) => v !== undefined && v !== null && v !== ""));
  document.getElementById("doc-text").textContent = d.text ?? "(no text: dropped before extraction)";
  const pt = d.page_text || {};
  document.getElementById("doc-page-text").textContent = pt.text ?? `(${pt.error || "not available"})`;
  const checks = table("doc-checks", ["", "rule", "value", "breaks when", "verdict"], []);
  (d.checks || []).forEach((c) => {
    const tr = el("tr");
    tr.append(el("td", c.group), el("td", c.rule), el("td", c.value, "n"), el("td", c.breaks_when),
      el("td", c.verdict, c.verdict.startsWith("breaks") ? "verdict-drop" : "verdict-kept"));
    checks.append(tr);
  });
  document.getElementById("doc-no-checks").hidden = (d.checks || []).length > 0;
  const cl = document.getElementById("doc-cluster");
  cl.replaceChildren();
  if (d.cluster) {
    cl.append(el("h3", `Near-duplicate cluster (${d.cluster.members.length} members)`));
    cl.append(memberTable(d.cluster.members));
  }
  document.getElementById("doc").scrollIntoView();
}

function memberTable(members) {
  const t = el("table", null, "list");
  const head = el("tr");
  ["url", "verdict"].forEach((h) => head.append(el("th", h)));
  t.append(head);
  members.forEach((m) => {
    const tr = el("tr", null, "row");
    tr.append(el("td", m.url), el("td", m.verdict, m.verdict === "kept" ? "verdict-kept" : "verdict-drop"));
    tr.addEventListener("click", () => { show("documents"); openDocument(m.crawl_pos); });
    t.append(tr);
  });
  return t;
}

async function clusters() {
  const d = await api("/api/clusters", { page: state.clPage, size: state.size });
  document.getElementById("cluster-count").textContent = `${fmt(d.total)} near-duplicate cluster(s) of two or more`;
  const pages = Math.max(1, Math.ceil(d.total / d.size));
  document.getElementById("cl-page").textContent = `page ${d.page + 1} of ${fmt(pages)}`;
  document.getElementById("cl-prev").disabled = d.page === 0;
  document.getElementById("cl-next").disabled = d.page + 1 >= pages;
  const t = table("cluster-list", ["members", "an example"], []);
  d.rows.forEach((r) => {
    const tr = el("tr", null, "row");
    tr.append(el("td", fmt(r.members), "n"), el("td", r.example));
    tr.addEventListener("click", async () => {
      const c = await api("/api/cluster", { id: r.cluster });
      const box = document.getElementById("cluster-members");
      box.replaceChildren(el("h3", `Cluster ${c.cluster}`), memberTable(c.members));
    });
    t.append(tr);
  });
}

function report(e) {
  document.getElementById("status").textContent = "error: " + e.message;
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("nav button").forEach((b) => b.addEventListener("click", () => {
    show(b.dataset.view);
    if (b.dataset.view === "clusters") clusters().catch(report);
    if (b.dataset.view === "documents") documents().catch(report);
  }));
  document.getElementById("filters").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const form = new FormData(ev.target);
    setFilters(Object.fromEntries([...form.entries()].filter(([, v]) => v)));
  });
  document.getElementById("doc-prev").addEventListener("click", () => { state.docPage--; documents().catch(report); });
  document.getElementById("doc-next").addEventListener("click", () => { state.docPage++; documents().catch(report); });
  document.getElementById("cl-prev").addEventListener("click", () => { state.clPage--; clusters().catch(report); });
  document.getElementById("cl-next").addEventListener("click", () => { state.clPage++; clusters().catch(report); });
  status().then(() => { document.body.dataset.ready = "1"; }).catch(report);
  setInterval(() => status().catch(report), 5000);
});
