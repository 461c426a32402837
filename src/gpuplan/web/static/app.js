// gpuplan page: the form is built from the Scenario model (/api/form); every change re-estimates through the
// JSON API and redraws. Server text is always inserted as text, never as HTML.
"use strict";

const {stackedBar, scatter, curve, fmtGiB} = window.gpuplanCharts;
const COLORS = {weights: "#4c78a8", gradients: "#f58518", optimizer: "#e45756", activations: "#72b7b2",
  kv: "#54a24b", other: "#b279a2"};
const GROUP_TITLES = {training: "Training options", techniques: "Training techniques", inference: "Inference options",
  load: "Serving load (users or a request rate, simulated)", parallelism: "Parallelism and offload", pricing: "Pricing",
  diffusion: "Diffusion options", more: "More"};
const DEFAULT_SCENARIO = {model: "llama-3.1-8b", task: "train", method: "qlora", gpu: "rtx-4090"};
const state = {fields: [], seq: 0, timer: null, result: null, explanation: null, scenario: null, uploads: {},
  maxUpload: 0, kinds: {}, reads: {}};

const $ = (sel) => document.querySelector(sel);

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, "");
    else if (v !== false && v !== null && v !== undefined) el.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// A File is sent as its bytes (/api/upload), anything else as JSON. A 503 with Retry-After (a dataset still being
// read, a busy server) is asked again after that wait, a bounded number of times; ``waiting`` hears its sentence.
async function api(path, body, tries = 12, waiting = null) {
  const init = body === undefined ? {} : body instanceof File ?
    {method: "POST", headers: {"content-type": "application/octet-stream"}, body} :
    {method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify(body)};
  const res = await fetch(path, init);
  const wait = res.status === 503 ? parseFloat(res.headers.get("Retry-After")) : NaN;
  const data = await res.json().catch(() => ({detail: res.statusText}));
  if (wait > 0 && tries > 0) {
    if (waiting) waiting(data.detail || res.statusText);
    await new Promise((done) => setTimeout(done, wait * 1000));
    return api(path, body, tries - 1, waiting);
  }
  if (!res.ok) throw Object.assign(new Error(data.detail || res.statusText), {status: res.status});
  return data;
}

// A number box the browser could not read ("1e400", "1-2": its value is then "") is sent as this text, so that the
// API's 422 names the field, rather than dropped for the default.
const UNREADABLE = "(not a number)";

// a number box's value as the API takes it: undefined when empty (the default), else the number typed
function boxValue(el) {
  if (el.validity.badInput) return UNREADABLE;
  const raw = el.value.trim();
  return raw === "" ? undefined : Number(raw);
}

const num = (x, digits = 2) => x.toLocaleString("en-US", {minimumFractionDigits: digits, maximumFractionDigits: digits});
// gpuplan.result.usd_amount: below a tenth of a cent, two significant digits ($0.00045, not $0.000)
const usd = (x) => "$" + (x >= 100 ? num(x, 0) : x >= 1 ? num(x, 2) : x > 0 && x < 0.001 ?
  num(x, 1 - Math.floor(Math.log10(x))) : num(x, 3));
// tokens/s: whole from 10 up, two significant digits below (not "0" for a model run from system RAM; cli/estimate.py)
const rate = (x) => (x >= 10 ? num(x, 0) : x.toLocaleString("en-US", {maximumSignificantDigits: 2}));

// ---- the kind of model: which fields its plan reads (FieldSpec.kinds) -----------------------------------------
// the bundled models that are not decoder LLMs come with the form; another model's kind is learnt from its plan
function kindOf(model) {
  return state.kinds[(model || "").trim().toLowerCase()] || "decoder";
}

// whether the form shows (and sends) field f for this task and model: for a bundled model that is not a decoder LLM
// the fields its own plan reads for the task (ModuleModel.reads, the resolver's list: SDXL reads no seq_len, SD3 and
// Flux read it as their T5 tokens), else the fields the task and the model's kind read (FieldSpec.task, .kinds)
function readBy(f, task, model) {
  const own = state.reads[(model || "").trim().toLowerCase()];
  if (own) return own[task].includes(f.name);
  return (f.task === "both" || f.task === task) && f.kinds.includes(kindOf(model));
}

function learnKind(r) {  // a repo id fetched from the hub: its plan's work says what it is
  const w = r.work;
  if (!w || kindOf(r.scenario.model) !== "decoder") return;
  state.kinds[r.scenario.model.trim().toLowerCase()] = w.kind.startsWith("diffusion") ? "diffusion" :
    r.model.family === "whisper" ? "speech" : "decoder_tokens" in w.sizes ? "encoder-decoder" :
    "encoder_tokens" in w.sizes ? "text-encoder" : "encoder";
}

// ---- the form ------------------------------------------------------------------------------------------
function makeInput(f) {
  const id = "f-" + f.name;
  if (f.kind === "choice") {
    const sel = h("select", {id, name: f.name});
    if (f.optional || f.required) sel.append(h("option", {value: ""}, f.required ? "(choose)" : "(auto)"));
    for (const c of f.choices) sel.append(h("option", {value: c}, c));
    return sel;
  }
  if (f.kind === "bool") return h("input", {id, name: f.name, type: "checkbox"});
  if (f.kind === "file") {  // read here and uploaded (/api/upload); the scenario carries the server's reference
    const input = h("input", {id, name: f.name, type: "file", accept: f.accept});
    for (const ev of ["input", "change"]) input.addEventListener(ev, (e) => e.stopPropagation());
    input.addEventListener("change", () => chooseFile(f.name, input));
    const clear = h("button", {type: "button", class: "clear", hidden: true, onclick: () => {
      input.value = "";
      chooseFile(f.name, input);
    }}, "clear");
    return h("span", {class: "file"}, input, h("span", {class: "hint", id: id + "-status"}), clear);
  }
  if (f.kind === "int" || f.kind === "float") {
    return h("input", {id, name: f.name, type: "number", step: f.kind === "int" ? "1" : "any",
      min: f.minimum !== null && !f.exclusive_minimum ? f.minimum : null,
      max: f.maximum !== null && !f.exclusive_maximum ? f.maximum : null,
      placeholder: f.default === null ? "" : String(f.default)});
  }
  const placeholder = f.name === "model" ? "alias, bundled name or org/name" :
    f.kind === "list" ? "all-linear or q_proj,v_proj" : f.default === null ? "(default)" : String(f.default);
  return h("input", {id, name: f.name, type: "text", list: f.suggest ? "list-" + f.suggest : null,
    placeholder, spellcheck: "false"});
}

async function chooseFile(name, input) {
  const status = document.getElementById(input.id + "-status");
  const clear = input.parentElement.querySelector(".clear");
  const file = input.files[0];
  delete state.uploads[name];
  status.textContent = "";
  clear.hidden = !file;
  if (file && file.size > state.maxUpload) {
    showError(`${file.name} is ${file.size.toLocaleString("en-US")} bytes; the page takes files up to ` +
      `${state.maxUpload.toLocaleString("en-US")} bytes (use gpuplan estimate --dataset FILE for larger ones)`, name);
    return;
  }
  if (file) {
    status.textContent = "uploading...";
    try {
      const query = new URLSearchParams({kind: name, name: file.name});
      const up = await api("/api/upload?" + query, file);
      state.uploads[name] = up.ref;
      status.textContent = `${up.bytes.toLocaleString("en-US")} bytes`;
    } catch (e) {
      status.textContent = "";
      showError(e.message, name);
      return;
    }
  }
  schedule();
}

function buildForm(form) {
  state.fields = form.fields;
  state.maxUpload = form.max_upload_bytes;
  const host = $("#scenario");
  host.replaceChildren();
  const groups = {main: h("div", {class: "group main"})};
  for (const f of form.fields) {
    if (!groups[f.group]) {
      groups[f.group] = h("details", {class: "group", "data-group": f.group},
        h("summary", {}, GROUP_TITLES[f.group] || f.group));
    }
    groups[f.group].append(h("label", {class: "field", for: "f-" + f.name, "data-field": f.name,
      "data-task": f.task, "data-kinds": f.kinds.join(" "), title: f.description || null},
    h("span", {class: "name"}, f.label), makeInput(f)));
  }
  host.append(...Object.values(groups));
  host.append(h("p", {class: "hint"}, "Empty fields take their defaults. A Hugging Face repo id works for the model ",
    form.hub ? "(this server fetches config.json from the hub)." : "when the server runs with --hub."));
  $("#list-quants").replaceChildren(...form.quants.map((q) => h("option", {value: q})));
  $("#list-providers").replaceChildren(...form.providers.map((p) => h("option", {value: p})));
  host.addEventListener("input", schedule);
  host.addEventListener("change", schedule);
}

function fillForm(values) {
  for (const f of state.fields) {
    const el = document.getElementById("f-" + f.name);
    const v = values[f.name];
    if (f.kind === "file") {  // a permalink's upload reference, kept while the server keeps the file
      if (typeof v === "string" && v.startsWith("upload:")) state.uploads[f.name] = v;
      else delete state.uploads[f.name];
      document.getElementById(el.id + "-status").textContent = state.uploads[f.name] ?
        "uploaded: " + v.split("/").pop() : "";
    } else if (f.kind === "bool") el.checked = v === undefined ? !!f.default : v === true || v === "true";
    else if (v === undefined || v === null) el.value = f.kind === "choice" && !f.optional && !f.required
      ? f.default : f.kind === "list" && f.default === "all-linear" ? "" : "";
    else el.value = Array.isArray(v) ? v.join(",") : String(v);
  }
}

function readForm() {
  const task = document.getElementById("f-task").value;
  const model = document.getElementById("f-model").value;
  const out = {};
  for (const f of state.fields) {
    if (!readBy(f, task, model)) continue;
    const el = document.getElementById("f-" + f.name);
    let v;
    if (f.kind === "file") {  // a tokenizer counts a dataset: it waits for one
      if (state.uploads[f.name] && (f.name !== "tokenizer" || state.uploads.dataset)) out[f.name] = state.uploads[f.name];
      continue;
    } else if (f.kind === "bool") {
      v = el.checked;
    } else if (el.validity.badInput) {
      v = UNREADABLE;
    } else {
      const raw = el.value.trim();
      if (raw === "" && !f.required) continue;
      if (f.kind === "int") v = /^-?\d+$/.test(raw) ? parseInt(raw, 10) : raw;
      else if (f.kind === "float") v = raw !== "" && Number.isFinite(Number(raw)) ? Number(raw) : raw;
      else if (f.kind === "list") v = raw === "all-linear" ? raw : raw.split(",").map((s) => s.trim()).filter(Boolean);
      else v = raw;
    }
    if (!f.required && JSON.stringify(v) === JSON.stringify(f.default)) continue;
    out[f.name] = v;
  }
  return out;
}

// "(auto)" choices say what the stack or the GPU count resolved them to; a choice left at its default that the
// model resolved otherwise (a diffusion model trains with diffusers, not the default hf) says so on its option
function showResolved(normalized) {
  for (const f of state.fields) {
    const el = document.getElementById("f-" + f.name);
    if (f.kind !== "choice" || !el.options.length) continue;
    const v = normalized[f.name];
    if (f.optional) {
      el.options[0].textContent = v === undefined || v === null ? "(auto)" : `(auto: ${v})`;
      continue;
    }
    for (const o of el.options) {
      o.textContent = o.value === f.default && el.value === f.default && v && v !== f.default ?
        `(auto: ${v})` : o.value || o.textContent;
    }
  }
}

// the fields the task and the model read (readBy); a group with none of them is hidden too
function showFields(task, model) {
  const kind = kindOf(model);
  const fields = Object.fromEntries(state.fields.map((f) => [f.name, f]));
  document.querySelectorAll("label[data-field]").forEach((el) => {
    el.hidden = !readBy(fields[el.dataset.field], task, model);
  });
  // a blank field this kind of model plans otherwise than the field's default (FieldSpec.kind_defaults)
  for (const f of state.fields.filter((x) => Object.keys(x.kind_defaults).length)) {
    const input = document.getElementById("f-" + f.name);
    input.placeholder = f.kind_defaults[kind] ?? (f.default === null ? "" : String(f.default));
    input.title = f.kind_defaults[kind] ?? "";
  }
  document.querySelectorAll("details.group").forEach((g) => {
    g.hidden = !g.querySelector(".field:not([hidden])");
  });
  document.querySelectorAll(".train-only, .infer-only, .decoder-only").forEach((el) => {
    const c = el.classList;
    el.hidden = (c.contains("train-only") && task !== "train") || (c.contains("infer-only") && task !== "infer") ||
      (c.contains("decoder-only") && kind !== "decoder");
  });
  document.body.dataset.kind = kind;
}

function queryOf(scenario) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(scenario)) q.set(k, Array.isArray(v) ? v.join(",") : String(v));
  return q.toString();
}

function schedule() {
  clearTimeout(state.timer);
  state.timer = setTimeout(update, 200);
}

// ---- one round: estimate, formulas, exports; then the heavier searches ------------------------------------
async function update() {
  state.timer = null;
  const seq = ++state.seq;
  const scenario = readForm();
  showFields(scenario.task, scenario.model);
  history.replaceState(null, "", "?" + queryOf(scenario));
  document.body.classList.add("busy");
  // long work (a dataset read, a busy server) says so: "estimating..." after a moment, then the server's sentence
  const progress = $("#progress");
  const say = (text) => {
    if (seq === state.seq) [progress.hidden, progress.textContent] = [false, text];
  };
  const slow = setTimeout(() => say("estimating..."), 500);
  try {
    const [result, explanation, exported] = await Promise.all([api("/api/estimate", scenario, 12, say),
      api("/api/explain", scenario, 12, say), api("/api/export", scenario, 12, say)]).finally(() => {
      clearTimeout(slow);
      if (seq === state.seq) progress.hidden = true;
    });
    if (seq !== state.seq) return;
    Object.assign(state, {result, explanation, scenario});
    learnKind(result);
    showFields(scenario.task, scenario.model);
    clearError();
    showResolved(result.scenario);
    renderVerdict(result);
    renderMemory(result);
    renderFixes(result);
    renderSpeedCost(result, explanation);
    renderLoad(result);
    renderData(result);
    renderAssumptions(result, explanation);
    renderExport(exported);
    syncCapacityEngine(result.scenario.engine);
    if (state.launched !== queryOf(scenario)) {  // the files of another scenario go
      $("#launch-files").replaceChildren();
      $("#launch-summary").textContent = "";
    }
    renderModel(result);
    fillFormulas();
    document.body.classList.remove("busy");
    await heavy(seq);
  } catch (e) {
    if (seq !== state.seq) return;
    document.body.classList.remove("busy");
    showError(e.message);
  }
}

function searching(on) {
  for (const id of ["#setups", "#catalog"]) $(id).setAttribute("aria-busy", String(on));
}

async function heavy(seq) {
  const scenario = state.scenario;
  const constraints = {objective: $("#objective").value};
  // a diffusion pipeline, an encoder-decoder or an encoder: one card per setup, ranked over every card
  const module = kindOf(scenario.model) !== "decoder";
  let searched = scenario;
  if (module) {
    searched = Object.fromEntries(Object.entries(scenario).filter(([k]) => k !== "gpu"));
  } else {
    const most = boxValue($("#max-gpus"));
    if (most !== undefined) constraints.max_gpus = most;
    if (scenario.task === "train") constraints.any_method = $("#any-method").checked;
    else constraints.any_quant = $("#any-quant").checked;
  }
  searching(true);  // the last scenario's ranking and grid stay, dimmed, until this one's arrive
  const [rec, grid] = await Promise.allSettled([api("/api/recommend", {scenario: searched, constraints}),
    api("/api/fit-grid", {scenario, axis: $("#grid-axis").value})]);
  if (seq !== state.seq) return;
  searching(false);
  if (rec.status === "fulfilled") (module ? renderCards : renderSetups)(rec.value, scenario);
  else $("#setups-summary").textContent = rec.reason.message;
  if (grid.status === "fulfilled") renderGrid(grid.value, state.result);
  else {  // the API's sentence (a model that is not a decoder LLM has no grid)
    $("#grid-note").textContent = grid.reason.message;
    $("#grid").replaceChildren();
    $("#curve").replaceChildren();
  }
  document.body.dataset.ready = String(seq);
}

// The field a sentence is about: an uploaded file's (the reader names the file first), a quoted scenario field, the
// model or the GPU by the resolver's words, else the first form field the sentence names (lora_targets, provider).
function fieldNamed(message) {
  for (const [name, ref] of Object.entries(state.uploads)) {
    const file = ref.split("/").pop();
    if (message.startsWith(file) || message.includes(`'${file}'`)) return name;
  }
  const quoted = /field '([a-z_]+)'/.exec(message);
  if (quoted) return quoted[1];
  if (/^unknown model|model '|bundled model|does not read files on the server/.test(message)) return "model";
  if (/^unknown GPU|could be nvidia/.test(message)) return "gpu";
  let first = null, at = Infinity;
  for (const f of state.fields) {
    const i = message.search(new RegExp(`(^|[^a-z_])${f.name}([^a-z_]|$)`));
    if (i >= 0 && i < at) [first, at] = [f.name, i];
  }
  return first;
}

// Bad input: the API's sentence in the verdict and beside the field it names (its group opened); the sections below
// still hold the last plan that worked, so they are dimmed and say so, and that plan's warnings go.
function showError(message, field = fieldNamed(message)) {
  const v = $("#verdict");
  v.className = "error";
  v.dataset.fits = "error";
  v.replaceChildren(message);
  clearError();
  const label = field && document.querySelector(`.field[data-field="${field}"]`);
  if (label) {
    label.classList.add("invalid");
    const group = label.closest("details");
    if (group) group.open = true;
    label.after(h("p", {class: "field-error", id: "error-" + field, role: "alert"}, message));
    const input = document.getElementById("f-" + field);
    input?.setAttribute("aria-invalid", "true");
    input?.setAttribute("aria-describedby", "error-" + field);
  }
  $("#warnings").replaceChildren(...(state.result ? [h("li", {class: "stale-note"},
    "the sections below still show the last scenario that could be planned")] : []));
  document.body.classList.toggle("failed", !!state.result);
  searching(false);
  document.body.dataset.ready = "error-" + state.seq;
}

function clearError() {
  document.querySelectorAll(".field.invalid").forEach((el) => el.classList.remove("invalid"));
  document.querySelectorAll(".field-error").forEach((el) => el.remove());
  document.querySelectorAll("[aria-invalid]").forEach((el) => {
    el.removeAttribute("aria-invalid");
    el.removeAttribute("aria-describedby");
  });
  document.body.classList.remove("failed");
}

// ---- numbers that open into their formulas ---------------------------------------------------------------
function numberRow(key, label, text, value, color) {
  return h("details", {class: "num", "data-key": key},
    h("summary", {}, color ? h("span", {class: "swatch", style: `background:${color}`}) : null,
      h("span", {class: "label"}, label), h("span", {class: "value", "data-value": value}, text)),
    h("div", {class: "formula"}));
}

function fillFormulas() {
  const numbers = state.explanation ? state.explanation.numbers : {};
  document.querySelectorAll("details.num").forEach((d) => {
    const f = numbers[d.dataset.key];
    const box = d.querySelector(".formula");
    if (!f) {
      box.replaceChildren(h("p", {class: "hint"}, "no formula for this number"));
      return;
    }
    const off = f.computed !== null && Math.abs(f.computed - f.value) > 0.005 * Math.max(Math.abs(f.value), 1e-6);
    box.replaceChildren(...[
      h("p", {class: "rule"}, f.formula),
      h("p", {class: "with-values"}, f.substituted),
      f.note || off ? h("p", {class: "note"}, f.note || "the estimate adds terms this formula does not show") : null,
      f.constants.length ? h("table", {class: "constants"}, h("tr", {}, h("th", {}, "constant"), h("th", {}, "value"),
        h("th", {}, "source")), f.constants.map((c) => h("tr", {}, h("td", {}, c.name), h("td", {}, c.value),
        h("td", {}, c.source)))) : null,
      f.accuracy ? h("p", {class: "accuracy"}, "measured accuracy: ", f.accuracy.summary, " ",
        h("a", {href: f.accuracy.link, target: "_blank", rel: "noopener"}, "accuracy table")) : null,
    ].filter(Boolean));
  });
}

// ---- sections ------------------------------------------------------------------------------------------
function renderVerdict(r) {
  // the plan's own sentence (gpuplan/plan/plan.py Verdict): the command line and the API state the same words
  const m = r.memory, verdict = r.verdict, v = $("#verdict");
  v.className = verdict.fits === null ? "neutral" : verdict.fits ? "ok" : "bad";
  v.dataset.fits = verdict.fits === null ? "none" : String(verdict.fits);
  v.dataset.peak = verdict.device_peak_gib;
  v.dataset.headroom = verdict.headroom_gib ?? "";
  const word = verdict.word ? [h("strong", {id: "verdict-word"}, verdict.word[0].toUpperCase() + verdict.word.slice(1))]
    : [];
  const rest = verdict.sentence.slice(verdict.word.length);
  v.replaceChildren(...word, (word.length ? rest : rest[0].toUpperCase() + rest.slice(1)) + ".");
  const lines = verdict.details.map((line) => line + ".");
  if (m.fits !== null) {
    const t = r.scenario.task === "train";
    // images and audio windows have no longest sequence (a diffusion pipeline's, an encoder's plan: its work,
    // null where the card has no rate to time it: session 22's walk read "longest sequence: none" for SDXL)
    const longest = "work" in r ? "" : `; longest ${t ? "sequence" : "prompt"}: ` +
      (m.max_seq_len ? m.max_seq_len.toLocaleString() + " tokens" : "none");
    // max_batch_size_capped: the search's limit, a floor (gpuplan/result.py batch_words says it the same way)
    const most = m.max_batch_size ? m.max_batch_size.toLocaleString("en-US") +
      (m.max_batch_size_capped ? " or more (the search stops there)" : "") : "none";
    lines.push(`Largest ${t ? "micro-batch" : "batch"} that fits: ${most}${longest}.`);
  }
  if (lines.length) v.append(h("div", {class: "sub"}, lines.join(" ")));
  const warnings = [...r.warnings];
  if (r.model.exact === false) warnings.unshift("this model's architecture is read approximately (Llama-like)");
  $("#warnings").replaceChildren(...warnings.map((w) => h("li", {}, w)));
}

function renderMemory(r) {
  const m = r.memory;
  const parts = [["weights", "weights", m.weights_gib, COLORS.weights],
    ["gradients", "gradients", m.gradients_gib, COLORS.gradients],
    ["optimizer", "optimizer states", m.optimizer_gib, COLORS.optimizer],
    ["activations", "activations", m.activations_gib, COLORS.activations],
    ["kv_cache", "KV cache", m.kv_cache_gib, COLORS.kv]];
  const otherTotal = Object.values(m.other).reduce((a, b) => a + b, 0);
  stackedBar($("#membar"), [...parts.map(([, name, gib, color]) => ({name, gib, color})),
    {name: "other: " + Object.keys(m.other).join(", "), gib: otherTotal, color: COLORS.other}],
  {allocated: m.allocated_peak_gib, reserved: m.reserved_peak_gib, device: m.device_peak_gib}, m.capacity_gib);
  const rows = [];
  for (const [key, name, gib, color] of parts) {
    if (gib > 0.0005) rows.push(numberRow(`memory.${key}_gib`, name, num(gib) + " GiB", gib, color));
  }
  for (const [name, gib] of Object.entries(m.other)) {
    rows.push(numberRow(`memory.other.${name}`, "other: " + name, num(gib) + " GiB", gib, COLORS.other));
  }
  rows.push(h("hr", {class: "levels"}));
  rows.push(numberRow("memory.allocated_peak_gib", `allocated peak (${m.peak_phase}) = max_memory_allocated`,
    num(m.allocated_peak_gib) + " GiB", m.allocated_peak_gib));
  rows.push(numberRow("memory.reserved_peak_gib", "reserved peak = max_memory_reserved", num(m.reserved_peak_gib) +
    " GiB", m.reserved_peak_gib));
  rows.push(numberRow("memory.device_peak_gib", "device peak (what nvidia-smi shows)", num(m.device_peak_gib) +
    " GiB", m.device_peak_gib));
  if (m.capacity_gib !== null) {
    rows.push(numberRow("memory.capacity_gib", `usable on ${r.gpu.name}`, num(m.capacity_gib) + " GiB", m.capacity_gib));
    rows.push(numberRow("memory.headroom_gib", "headroom", (m.headroom_gib >= 0 ? "+" : "") + num(m.headroom_gib) +
      " GiB", m.headroom_gib));
  }
  if (m.cpu_gib) rows.push(h("p", {class: "hint"}, `CPU memory for offloaded states: ${num(m.cpu_gib, m.cpu_gib < 1 ? 2 : 1)} GiB`));
  $("#memrows").replaceChildren(...rows);
}

function applyFields(fields) {
  for (const [k, v] of Object.entries(fields)) {
    const el = document.getElementById("f-" + k);
    if (!el) continue;
    if (el.type === "checkbox") el.checked = !!v;
    else el.value = v === null ? "" : String(v);
  }
  update();
}

function renderFixes(r) {
  const m = r.memory, body = $("#fixes-body");
  if (m.fits === null) {
    body.replaceChildren(h("p", {class: "hint"}, "Name a GPU to see what would make the job fit on it."));
  } else if (m.fits) {
    body.replaceChildren(h("p", {}, `It fits with ${num(m.headroom_gib, 1)} GiB to spare; nothing to change.`));
  } else if (!r.suggestions.length) {
    body.replaceChildren(h("p", {}, "No single change makes it fit on this card: try the setups below."));
  } else {
    body.replaceChildren(h("table", {id: "fixes-table"},
      h("tr", {}, ["change", "new device peak", "fits", "speed cost", ""].map((c) => h("th", {}, c))),
      r.suggestions.map((s) => [s, s.change.replace(/: [\d.]+ -> [\d.]+ GiB$/, "")]).map(([s, change]) =>
        h("tr", {class: s.fits ? "fit" : "nofit"}, h("td", {}, change),
        h("td", {class: "n", "data-value": s.device_peak_gib}, num(s.device_peak_gib) + " GiB"),
        h("td", {}, s.fits ? "fits" : "still too big"), h("td", {}, s.cost),
        h("td", {}, h("button", {type: "button", "aria-label": "apply: " + change, onclick: () => applyFields(s.fields)},
          "apply"))))));
  }
}

function renderSpeedCost(r, explanation) {
  const sp = r.speed, c = r.cost, rows = [];
  if (r.work) {
    $("#speed-rows").replaceChildren(...workRows(r, explanation));
    return;
  }
  if (!sp) {
    // a card named but not timed (no rate for its work: an A10G's fp32 under SDXL's VAE) says why, not "name a
    // GPU" (session 22's walk)
    const why = r.gpu && (r.warnings || []).find((w) => w.startsWith("no speed or cost: "));
    $("#speed-rows").replaceChildren(h("p", {class: "hint"}, why
      ? `No speed or cost on ${r.gpu.name}: ${why.slice("no speed or cost: ".length)}.`
      : "Name a GPU for speed and cost."));
    return;
  }
  const train = r.scenario.task === "train";
  const range = sp.tokens_per_s_high ? ` (${rate(sp.tokens_per_s_low)} to ${rate(sp.tokens_per_s_high)})` : "";
  const run = r.load;
  if (run && run.output_throughput) {  // the headline of a plan with a load run: what that run served
    // its steady window's (after the warm-up, before the drain), as the CLI and capacity say it (load.py served)
    const served = run.steady_output_throughput ?? run.output_throughput;
    rows.push(numberRow("load.output_throughput", `output tokens/s served at ${run.load_words} (the simulated run` +
      (run.steady_output_throughput != null ? " after its warm-up and before its drain" : "") +
      (c ? "; the cost is priced on it)" : ")"), rate(served), served));
  }
  rows.push(numberRow("speed.tokens_per_s", train ? "training tokens/s" : run && run.output_throughput ?
    `output tokens/s of the decode step at ${sp.batch_held ?? r.scenario.batch_size} at once` +
    (sp.batch_held ? ` (all the KV pool holds of the ${r.scenario.batch_size} users)` : "") :
    "output tokens/s (all sequences)",
    rate(sp.tokens_per_s) + range, sp.tokens_per_s));
  rows.push(numberRow("speed.step_time_s", train ? "optimizer step" : "decode step",
    train ? num(sp.step_time_s, 2) + " s" : num(sp.step_time_s * 1000, 1) + " ms", sp.step_time_s));
  if (train) {
    rows.push(numberRow("speed.flops_per_token", "FLOPs per token", num(sp.flops_per_token / 1e9, 1) + " GFLOP",
      sp.flops_per_token));
  } else {
    rows.push(numberRow("speed.ttft_s", "time to first token, one request alone", num(sp.ttft_s, 2) + " s",
      sp.ttft_s));
    const n = sp.batch_held ?? r.scenario.batch_size;  // users the KV pool cannot hold wait (plan/build.py held)
    if (sp.ttft_burst_s !== null && sp.ttft_burst_s !== undefined && n > 1) {
      rows.push(numberRow("speed.ttft_burst_s", `time to first token, the last of ${n} arriving together`,
        num(sp.ttft_burst_s, 2) + " s", sp.ttft_burst_s));
    }
    if (sp.streaming_tokens_per_s_per_user) {
      rows.push(numberRow("speed.streaming_tokens_per_s_per_user", "streaming tokens/s per user (1 / decode step)",
        rate(sp.streaming_tokens_per_s_per_user), sp.streaming_tokens_per_s_per_user));
    }
  }
  if (sp.offline_tokens_per_s) {  // TensorRT-LLM's figure under trtllm-bench's settings (speed.offline_basis)
    rows.push(numberRow("speed.offline_tokens_per_s", sp.offline_basis, rate(sp.offline_tokens_per_s),
      sp.offline_tokens_per_s));
  }
  if (sp.mfu) rows.push(numberRow("speed.mfu", "implied MFU", num(sp.mfu, 3), sp.mfu));
  rows.push(h("p", {class: "hint"}, `${sp.bound}-bound; the range: ` +
    (sp.band || "the calibration spread of this kind of estimate")));
  const shares = explanation ? explanation.step_shares : [];
  if (shares.length) {
    rows.push(h("p", {class: "hint", id: "step-shares"}, (train ? "step: " : "decode step: ") +
      shares.map(([name, pct]) => `${name.replace(/_/g, " ")} ${pct}%`).join(", ")));
  }
  if (c) {
    rows.push(c.pricing === "owned" ? h("p", {class: "offer"}, `${c.offer}: no rental price, the power it draws`)
      : h("p", {class: "offer"}, `best offer: ${c.offer} (${c.gpu_id}), price from ${c.price_origin}`,
        c.stale ? h("span", {class: "stale"}, " (stale)") : null));
    rows.push(numberRow("cost.usd_per_hour", "$ per hour", usd(c.usd_per_hour), c.usd_per_hour));
    if (c.usd_per_million_tokens !== null) {
      rows.push(numberRow("cost.usd_per_million_tokens", train ? "$ per million training tokens" :
        r.priced_tokens_per_s ? `$ per million output tokens (at the ${rate(r.priced_tokens_per_s)} tokens/s ` +
        "the simulated run served)" : "$ per million output tokens", usd(c.usd_per_million_tokens),
        c.usd_per_million_tokens));
    }
    if (train && r.scenario.train_tokens) {
      rows.push(numberRow("cost.hours", "hours", num(c.hours, 1) + " h", c.hours));
      rows.push(numberRow("cost.usd_total", "GPU time", usd(c.usd_total), c.usd_total));
      if (c.bill_usd) rows.push(numberRow("cost.bill_usd", "the whole bill (storage, egress, billing rounding)",
        usd(c.bill_usd), c.bill_usd));
    } else if (train) {
      rows.push(h("p", {class: "hint"}, "Set train tokens (training options) for the job's hours and total."));
    }
    if (c.spot) rows.push(spotHint(c));
  }
  $("#speed-rows").replaceChildren(...rows);
}

// a spot plan's line under its cost, a decoder's or a module's (gpuplan.market.cost.spot_plan)
function spotHint(c) {
  return h("p", {class: "hint"}, `spot: checkpoint every ${num(c.spot.interval_h * 60, 0)} min (Daly), ` +
    `an interruption every ${num(c.spot.mtbi_h, 1)} h on average: wall time x${num(c.spot.overhead, 2)}`);
}

// what one sample of a module plan is (gpuplan.explain.module_speed.unit)
function unitOf(r) {
  if (r.work.kind.startsWith("diffusion")) return "images";
  return r.scenario.audio_seconds && r.scenario.task === "infer" ? "windows" : "samples";
}

// a diffusion pipeline's, an encoder-decoder's or an encoder's plan: its work (it/s, seconds per image or per
// recording, the parts of a step) and its price, as `gpuplan estimate` prints them (cli/modules.py render_work)
function workRows(r, explanation) {
  const w = r.work, s = r.scenario, c = r.cost, unit = unitOf(r), rows = [];
  const train = s.task === "train";
  const range = ` (likely ${num(w.samples_per_s_low, 3)} to ${num(w.samples_per_s_high, 3)})`;
  if (w.kind === "diffusion generation") {
    rows.push(numberRow("work.image_s", `seconds per call of ${w.samples_per_step} image(s), ${w.steps} steps`,
      num(w.image_s, 1) + " s", w.image_s));
    rows.push(numberRow("work.steps_per_s", "denoising it/s", num(w.steps_per_s, 2) + " it/s", w.steps_per_s));
    rows.push(numberRow("work.images_per_hour", "images per hour", num(w.images_per_hour, 0), w.images_per_hour));
    if (w.first_call_s != null) {
      rows.push(numberRow("work.first_call_s", "first call after loading the pipeline",
        `${num(w.first_call_s, 1)} s (likely ${num(w.first_call_range_s[0], 1)} to ${num(w.first_call_range_s[1], 1)})`,
        w.first_call_s));
    }
  } else if (train) {
    rows.push(numberRow("work.steps_per_s", "it/s (optimizer steps)", num(w.steps_per_s, 2) + " it/s",
      w.steps_per_s));
    rows.push(numberRow("work.step_s", "optimizer step", num(w.step_s, 2) + " s", w.step_s));
  } else {
    const what = unit === "windows" ? `seconds per recording of ${s.audio_seconds} s (${w.samples_per_step} windows, ` +
      `${w.batch} per pass)` : `seconds per batch of ${w.samples_per_step}`;
    rows.push(numberRow("work.image_s", what, num(w.image_s, 3) + " s", w.image_s));
  }
  rows.push(numberRow("work.samples_per_s", `${unit}/s`, num(w.samples_per_s, 3) + range, w.samples_per_s));
  rows.push(numberRow("work.mfu", "implied MFU", num(w.mfu, 3), w.mfu));
  rows.push(h("p", {class: "hint"}, `${w.bound}-bound`));
  const shares = explanation ? explanation.step_shares : [];
  if (shares.length) {
    rows.push(h("p", {class: "hint", id: "step-shares"}, (train ? "step: " : "call: ") +
      shares.map(([name, pct]) => `${name} ${pct}%`).join(", ")));
  }
  if (r.memory.fits === false) {
    rows.push(h("p", {class: "hint"}, "Not priced: the job does not fit on this GPU" +
      (r.suggestions.length ? " (apply a change above)." : ".")));
  } else if (c) {
    rows.push(h("p", {class: "offer"}, `best offer: ${c.offer} (${c.gpu_id}), price from ${c.price_origin}`,
      c.stale ? h("span", {class: "stale"}, " (stale)") : null));
    rows.push(numberRow("cost.usd_per_hour", "$ per hour", usd(c.usd_per_hour), c.usd_per_hour));
    rows.push(numberRow("work.usd_per_1000_samples", `$ per 1,000 ${unit}`, usd(w.usd_per_1000_samples),
      w.usd_per_1000_samples));
    if (w.job_hours) {
      rows.push(numberRow("work.job_hours", `hours for ${s.train_steps.toLocaleString("en-US")} steps`,
        num(w.job_hours, 2) + " h", w.job_hours));
      if (c.spot) rows.push(numberRow("cost.hours", "hours on spot", num(c.hours, 2) + " h", c.hours), spotHint(c));
      rows.push(numberRow("cost.usd_total", "GPU time", usd(c.usd_total), c.usd_total));
    } else if (train) {
      rows.push(h("p", {class: "hint"}, "Set train steps for the job's hours and total."));
    }
  }
  rows.push(h("p", {class: "hint"}, "simulated: " + w.simulated.join("; ")));
  rows.push(h("p", {class: "hint"}, "modelled: " + w.modelled.join("; ")));
  return rows;
}

// the plan's simulated runs (gpuplan.serving.load): users or a rate, and the batch queued at once
function renderLoad(r) {
  const run = r.load, off = r.offline;
  $("#load").hidden = !run && !off;
  if (!run && !off) return;
  const notes = [];
  if (run) {
    $("#load-head").textContent = `${run.load_said}, ${run.num_prompts} request${run.num_prompts === 1 ? "" : "s"}, ` +
      `${run.lengths}: ` +
      `${num(run.request_throughput, 2)} req/s, ${num(run.output_throughput, 0)} output tok/s, ` +
      `${num(run.total_token_throughput, 0)} total tok/s; at most ${run.peak_running} running at once, ` +
      `${run.preemptions} preempted`;
    const cell = (v) => h("td", {class: "n", "data-value": v}, v === null ? "" : num(v, 1));
    $("#load-table").replaceChildren(
      h("tr", {}, ["ms", "mean", "median", "p90", "p99"].map((c) => h("th", {}, c))),
      ...[["ttft", "TTFT"], ["tpot", "TPOT"], ["itl", "ITL"], ["e2el", "E2EL"]].map(([k, label]) =>
        h("tr", {"data-key": "load." + k}, h("td", {}, label),
          ...["mean", "median", "p90", "p99"].map((st) => cell(run[`${st}_${k}_ms`])))));
    notes.push(`TTFT and E2EL include ${num(run.per_request_s * 1000, 1)} ms per request outside the engine's ` +
      "steps; TPOT is each request's mean gap, ITL every token's gap pooled", ...run.warnings);
  } else {
    $("#load-head").textContent = "";
    $("#load-table").replaceChildren();
  }
  if (off) {
    const together = off.peak_running >= off.num_prompts ? `all ${off.num_prompts} ran together` :
      `at most ${off.peak_running} of the ${off.num_prompts} ran together, the others waiting`;
    notes.push(`offline under the plan's settings (all ${off.num_prompts} requests queued at once; ` +
      "the engine's scheduler simulated): " +
      `${num(off.output_throughput, 0)} output tokens/s, ${num(off.duration, 1)} s in all; ${together}` +
      (off.preempted_words ? `, ${off.preempted_words}` : ""), ...off.warnings);
  }
  $("#load-notes").replaceChildren(...notes.map((t) => h("li", {}, t)));
}

// the data as gpuplan.dataset read it: the same section as `gpuplan estimate --dataset FILE`
function renderData(r) {
  const d = r.dataset;
  $("#data").hidden = !d;
  if (!d) return;
  const row = (key, label, value, text) => h("div", {class: "datum", "data-key": "dataset." + key},
    h("span", {class: "label"}, label), h("span", {class: "value", "data-value": value}, text ?? num(value, 0)));
  const rows = [
    row("source", "data", d.source, d.source + (d.tokenizer ? ` (tokenizer ${d.tokenizer})` : "")),
    row("samples", "records", d.samples),
    row("tokens_total", "tokens of their own", d.tokens_total),
    row("special_tokens", "EOS / template tokens the stack adds", d.special_tokens),
    row("mean_tokens", "mean tokens per record", d.mean_tokens, num(d.mean_tokens, 1)),
    row("p50_tokens", "p50", d.p50_tokens), row("p95_tokens", "p95", d.p95_tokens),
    row("max_tokens", "longest", d.max_tokens),
    row("truncated", `cut at seq_len ${num(d.seq_len, 0)}`, d.truncated),
    row("tokens_trained", "tokens trained per epoch", d.tokens_trained),
    row("epochs", "epochs", d.epochs, num(d.epochs, 2)),
    row("packing", "batching", d.packing, d.packing),
    row("packed_sequences", "sequences per epoch", d.packed_sequences),
    row("padding_pct", "padding", d.padding_pct, num(d.padding_pct, 1) + "%"),
  ];
  if (r.scenario.train_tokens) rows.push(h("div", {class: "datum", "data-key": "scenario.train_tokens"},
    h("span", {class: "label"}, "train tokens (epochs x tokens trained)"),
    h("span", {class: "value", "data-value": r.scenario.train_tokens}, num(r.scenario.train_tokens, 0))));
  $("#data-rows").replaceChildren(...rows);
  $("#data-notes").replaceChildren(...d.notes.map((n) => h("li", {}, n)));
}

function setupLabel(x) {
  return `${x.num_gpus}x ${x.gpu_id.replace(/^nvidia-|^geforce-|^amd-instinct-/g, "").replace(/^geforce-/, "")} ` +
    [x.sharding, ...x.techniques].join("+");
}

function renderSetups(rec, scenario) {
  const train = scenario.task === "train" && scenario.train_tokens;
  $("#setups-summary").textContent = `${rec.evaluated.toLocaleString()} setups evaluated in ` +
    `${num(rec.elapsed_s * 1000, 0)} ms, ${rec.fitting.toLocaleString()} fit.`;
  const table = $("#setups-table");
  if (!rec.setups.length) {
    table.replaceChildren(h("tr", {}, h("td", {}, "No setup fits. Smallest changes that would:")),
      ...rec.changes.map((c) => h("tr", {}, h("td", {}, c))));
    scatter($("#scatter"), [], setupLabel);
    return;
  }
  const cols = ["#", "setup", "offer", "GiB", "tok/s", ...(train ? ["hours", "$"] : []), "$/M tok"];
  table.replaceChildren(h("tr", {}, cols.map((c) => h("th", {}, c))),
    ...rec.setups.map((x, i) => h("tr", {class: x.pareto ? "pareto" : "",
                                        title: x.band ? `${x.rationale}; tok/s range: ${x.band}` : x.rationale},
      h("td", {}, `${i + 1}${x.pareto ? "*" : ""}`), h("td", {}, setupLabel(x)),
      h("td", {}, x.offer + (x.stale ? " (old price)" : "")),
      h("td", {class: "n"}, `${x.device_peak_gib.toFixed(0)}/${x.capacity_gib.toFixed(0)}`),
      h("td", {class: "n"}, `${num(x.tokens_per_s, 0)} ${x.speed_band}`),
      ...(train ? [h("td", {class: "n"}, num(x.hours, 1)), h("td", {class: "n"}, usd(x.usd_total))] : []),
      h("td", {class: "n"}, usd(x.usd_per_million_tokens)))));
  scatter($("#scatter"), rec.setups, (x) => `${setupLabel(x)} on ${x.offer}: ${num(x.tokens_per_s, 0)} tok/s, ` +
    `${usd(x.usd_per_million_tokens)}/M tokens`);
}

// recommend for a diffusion pipeline, an encoder-decoder or an encoder: one card per row, on its cheapest offer
function renderCards(rec, scenario) {
  const train = scenario.task === "train";
  $("#setups-summary").textContent = `${rec.evaluated.toLocaleString()} cards planned, ` +
    `${rec.fitting.toLocaleString()} fit. ` + [...rec.defaults, ...rec.notes].join(" ");
  scatter($("#scatter"), [], setupLabel);
  const rows = rec.setups, table = $("#setups-table");
  if (!rows.length) {
    table.replaceChildren(h("tr", {}, h("td", {}, "No card among the offers in force fits this job: name a GPU " +
      "above to see the changes that would make it fit.")));
    return;
  }
  const unit = rows[0].unit, job = rows.some((x) => x.usd_total !== null);
  const cols = ["#", "GPU", "offer", "GiB", train ? "s/step" : "s/call", `${unit}/s`, ...(job ? ["hours", "$"] : []),
    `$/1k ${unit}`];
  table.replaceChildren(h("tr", {}, cols.map((c) => h("th", {}, c))),
    ...rows.map((x, i) => h("tr", {"data-gpu": x.gpu_id}, h("td", {}, String(i + 1)),
      h("td", {}, [x.gpu_id.replace(/^nvidia-|^amd-instinct-/, "").replace(/^geforce-/, ""),
        ...x.techniques].join(" + ")),
      h("td", {}, x.offer), h("td", {class: "n"}, `${x.device_peak_gib.toFixed(1)}/${x.capacity_gib.toFixed(0)}`),
      h("td", {class: "n"}, num(train ? x.step_s : x.call_s, 3)), h("td", {class: "n"}, num(x.samples_per_s, 3)),
      ...(job ? [h("td", {class: "n"}, num(x.hours, 2)), h("td", {class: "n"}, usd(x.usd_total))] : []),
      h("td", {class: "n"}, usd(x.usd_per_1000)))));
}

function cellText(c, r) {
  if (c.max_concurrency !== null) return `${c.max_concurrency.toLocaleString()} req`;
  if (c.gpu_layers !== null) return `${c.gpu_layers}/${r.model.num_layers} layers`;
  return (c.headroom_gib >= 0 ? "+" : "") + num(c.headroom_gib, 1);
}

function renderGrid(grid, r) {
  const mine = r.gpu ? r.gpu.id : null;
  $("#grid-note").textContent = grid.note;
  $("#grid").replaceChildren(
    h("tr", {}, h("th", {}, "GPU"), h("th", {}, "usable GiB"), grid.columns.map((c) => h("th", {}, c))),
    ...grid.rows.map((row) => h("tr", {class: row.gpu_id === mine ? "mine" : "", "data-gpu": row.gpu_id},
      h("td", {}, row.name), h("td", {class: "n"}, num(row.capacity_gib, 1)),
      row.cells.map((c) => c.fits === null
        ? h("td", {class: "na", title: c.reason}, "n/a")
        : h("td", {class: c.fits ? "fit" : "nofit", "data-headroom": c.headroom_gib,
          title: `device ${num(c.device_peak_gib, 1)} GiB, headroom ${num(c.headroom_gib, 1)} GiB`}, cellText(c, r))))));
  curve($("#curve"), grid.curve, grid.capacities,
    {tokens: grid.curve_tokens, capacity: r.memory.capacity_gib, gpus: r.gpu ? [r.gpu.name] : []}, grid.curve_field);
}

function renderAssumptions(r, explanation) {
  $("#assumption-list").replaceChildren(
    ...r.assumptions.map((a) => h("li", {}, a)),
    ...r.warnings.map((w) => h("li", {class: "warn"}, "warning: " + w)),
    h("li", {class: "default"}, h("details", {id: "defaults"},
      h("summary", {}, `${explanation.defaults.length} fields left at their defaults`),
      h("ul", {}, explanation.defaults.map((d) => h("li", {}, d))))));
}

function renderExport(exp) {
  $("#permalink").value = `${location.origin}/?${exp.query}`;
  $("#export-yaml").textContent = exp.yaml;
  $("#export-command").textContent = exp.command;
  $("#export-markdown").textContent = exp.markdown;
}

function renderModel(r) {
  const m = r.model;
  const b = (n) => (n / 1e9).toFixed(n >= 1e10 ? 1 : 2) + "B";
  if (r.work !== undefined && m.num_layers === 0) {  // a pipeline or an encoder-decoder: its components
    const parts = r.work ? "; " + r.work.components.map((c) => `${c.name} ${c.class} ${b(c.params)}` +
      (c.on_gpu ? "" : " (off the GPU)")).join(", ") : "";
    $("#model-facts").textContent = `${m.name} (${m.family}): ${b(m.params_total)} parameters` +
      (m.params_trainable ? `, ${m.params_trainable.toLocaleString()} trainable` : "") + `${parts}; ${m.counted_by}.`;
    return;
  }
  $("#model-facts").textContent = `${m.name} (${m.family}): ${b(m.params_total)} parameters` +
    (m.params_active !== m.params_total ? `, ${b(m.params_active)} active` : "") +
    (m.params_trainable && m.params_trainable !== m.params_total ? `, ${m.params_trainable.toLocaleString()} trainable` : "") +
    `; ${m.num_layers} layers, hidden ${m.hidden_size}, ${m.num_kv_heads} KV heads x ${m.head_dim}, ` +
    `vocabulary ${m.vocab_size.toLocaleString()}.`;
}

// ---- buy or rent (POST /api/buy: the current scenario as one job) ----------------------------------------------
const HARDWARE = ["gpu", "num_gpus", "num_nodes", "provider", "pricing"];

function buyRequest() {
  const scenario = Object.fromEntries(Object.entries(state.scenario).filter(([k]) => !HARDWARE.includes(k)));
  const job = {name: "this job", scenario};
  if (scenario.task === "train") job.per_week = boxValue($("#buy-runs"));
  else job.hours_per_day = boxValue($("#buy-hours"));
  const build = $("#buy-build").value.trim() || `${state.scenario.num_gpus || 1}x${state.scenario.gpu || "rtx-4090"}`;
  const body = {build, workloads: [job], years: boxValue($("#buy-years"))};
  const have = $("#buy-have").value.trim();  // of the build's cards, those owned already (gpuplan buy --have)
  if (have) body.have = have;
  const rent = $("#buy-rent").value.trim();
  if (rent) body.rent = rent.split(",").map((x) => x.trim()).filter(Boolean);
  body.price = boxValue($("#buy-price"));  // what you pay per card (gpuplan buy --price): a card with no street price
  body.host_usd = boxValue($("#buy-host-usd"));
  return body;
}

function renderBuy(report) {
  const b = report.builds[0];
  const o = b.ownership;
  $("#buy-verdict").textContent = report.verdict;
  const rows = [h("tr", {}, ["setup", "total (low end)", "central", "break-even"].map((c) => h("th", {}, c))),
    h("tr", {}, h("td", {}, `own ${b.build.label}: purchase ${usd(o.purchase_usd)} + power ` +
      `${usd(o.power_low.usd)} - resale ${usd(o.resale_usd)}`), h("td", {class: "n"}, usd(o.total_usd_low)),
      h("td", {class: "n"}, usd(o.total_usd)), h("td", {}, `busy ${num(o.utilization_low * 100, 1)}% of hours`))];
  report.rentals.forEach((r, i) => {
    const v = b.versus[i];
    if (!v) return;
    // the words of `gpuplan buy` (cli/buy.py render_build)
    const months = v.break_even_months ? `owning pays after ${num(v.break_even_months, 0)} months` :
      "owning does not pay within 10 years";
    const share = v.break_even_utilization ? `${num(v.break_even_utilization * 100, 1)}% of hours` : "none";
    rows.push(h("tr", {}, h("td", {}, `rent ${r.setup} ${r.pricing.replace("_", "-")} (${r.offers.join(", ")})`),
      h("td", {class: "n"}, usd(v.rent_usd)), h("td", {class: "n"}, usd(v.rent_usd_central)),
      h("td", {}, `${months}; break-even utilization ${share}`)));
  });
  (b.keep || []).forEach((k) => rows.push(h("tr", {}, h("td", {}, k.line), h("td", {class: "n"}, usd(k.total_usd)),
    h("td", {class: "n"}, usd(k.total_usd_central)), h("td", {}, ""))));
  $("#buy-table").replaceChildren(...rows);
  $("#buy-checks").replaceChildren(...b.checks.map((c) => h("li", {class: c.status}, `${c.status}: ${c.line}`)),
    ...report.notes.map((n) => h("li", {}, n)));
}

async function compareBuy() {
  if (!state.scenario) return;
  $("#buy-verdict").textContent = "pricing...";
  try {
    renderBuy(await api("/api/buy", buyRequest()));
  } catch (e) {
    $("#buy-verdict").textContent = e.message;
    $("#buy-table").replaceChildren();
    $("#buy-checks").replaceChildren();
  }
}

// ---- launch files (POST /api/launch: gpuplan launch -o -, each file offered as a download; nothing is written) ----
function download(name, text) {
  const a = h("a", {href: URL.createObjectURL(new Blob([text], {type: "text/plain"})), download: name});
  a.click();
  URL.revokeObjectURL(a.href);
}

function renderLaunch(report) {
  $("#launch-summary").textContent = `${report.files.length} files for ${report.setup}` +
    (report.again ? `; on the command line: ${report.again} -o DIR` : "");
  $("#launch-files").replaceChildren(...report.files.map((f) => h("li", {"data-path": f.path},
    h("details", {}, h("summary", {}, h("code", {}, f.path), ` read by ${f.read_by} `,
      h("button", {type: "button", onclick: (e) => {
        e.preventDefault();
        download(f.path, f.text);
      }}, "download")), h("pre", {}, f.text)))));
}

async function makeLaunch() {
  if (!state.scenario) return;
  $("#launch-go").disabled = true;
  $("#launch-summary").textContent = "making the files...";
  $("#launch-files").replaceChildren();
  try {
    renderLaunch(await api("/api/launch", state.scenario));
    state.launched = queryOf(state.scenario);
  } catch (e) {
    $("#launch-summary").textContent = e.message;
  } finally {
    $("#launch-go").disabled = false;
  }
}

// ---- serving capacity (POST /api/capacity: the form's model and lengths, the load and SLOs of this section) ------
// the capacity search runs on the scenario's engine where it is one capacity simulates (a SGLang plan's search on
// SGLang, not on the select's first option)
function syncCapacityEngine(engine) {
  const select = $("#capacity-engine");
  if ([...select.options].some((o) => o.value === engine)) select.value = engine;
}

function capacityRequest() {
  const s = state.scenario, planned = state.result.scenario;  // the lengths the plan resolved, defaults included
  const body = {model: s.model, engine: $("#capacity-engine").value, prompt_tokens: planned.prompt_tokens,
    output_tokens: planned.output_tokens, max_gpus: boxValue($("#capacity-max-gpus")),
    pricing: $("#capacity-pricing").value};
  const kind = $("#capacity-kind").value;
  body[kind] = boxValue($("#capacity-load"));  // as typed: 0.4 users is the API's sentence, not 0 users
  // the form's load shape, as the plan above simulates it: users who think between turns, the lengths' spread
  if (kind === "users" && planned.think_time_s) body.think_time_s = planned.think_time_s;
  if (planned.length_spread !== null && planned.length_spread !== undefined) body.length_spread = planned.length_spread;
  for (const key of ["chunked_prefill", "async_scheduling"]) {
    if (s[key] !== null && s[key] !== undefined) body[key] = s[key];
  }
  if (kind !== "batch") {
    body.ttft_s = boxValue($("#capacity-ttft"));
    body.tpot_s = boxValue($("#capacity-tpot"));
  }
  const gpus = $("#capacity-gpus").value.trim();
  if (gpus) body.gpus = gpus.split(",").map((x) => x.trim()).filter(Boolean);
  if (s.quant) body.quant = s.quant;  // the form's weights on every setup, as the plan above has them
  if (s.ep > 1) body.expert_parallel = true;
  if (s.attention_dp) body.attention_dp = true;
  return body;
}

const ms = (x) => (x === null || x === undefined ? "" : num(x * 1000, 0) + " ms");
const cell = (x, text) => h("td", {class: "n", "data-value": x === null || x === undefined ? "" : x}, text ?? "");

function capacityColumns(kind, pct) {
  const offline = [["job_s", "time", (p) => (p.job_s === null ? "" : num(p.job_s, 1) + " s")],
    ["usd_per_job", "$ job", (p) => (p.usd_per_job === null ? "" : usd(p.usd_per_job))],
    ["job_peak_running", "ran at once", (p) => p.job_peak_running ?? ""],
    ["output_tokens_per_s", "out tok/s", (p) => (p.output_tokens_per_s ? num(p.output_tokens_per_s, 0) : "")]];
  const online = [kind === "users" ? ["max_users", "users", (p) => p.max_users ?? ""] :
    ["max_rate_rps", "req/s", (p) => num(p.max_rate_rps, 2)],
    ["ttft_s", `p${pct} TTFT`, (p) => ms(p.ttft_s)],
    ["tpot_s", `p${pct} TPOT`, (p) => (p.tpot_s === null && p.ttft_s !== null ? "n/a" : ms(p.tpot_s))],
    ["streaming_tokens_per_s_per_user", "tok/s/user",
      (p) => (p.streaming_tokens_per_s_per_user ? num(p.streaming_tokens_per_s_per_user, 0) : "")],
    ["usd_per_1k_requests", "$/1k req", (p) => (p.usd_per_1k_requests === null ? "" : usd(p.usd_per_1k_requests))],
    ["usd_per_hour_for_target", "$/h all", (p) => (p.usd_per_hour_for_target === null ? "" :
      usd(p.usd_per_hour_for_target))],
    // spot: the replicas run, and those the target needs up (the notes say the interruptions assumed)
    ["replicas_for_target", "replicas", (p) => (p.replicas_for_target === null ? "" :
      p.replicas_for_target + (p.replicas_up_for_target ? ` (${p.replicas_up_for_target} up)` : ""))]];
  return [...(kind === "batch" ? offline : online), ["offer", "offer", (p) => p.offer ?? ""],
    ["max_concurrency", "KV reqs", (p) => num(p.max_concurrency, 0)]];
}

function renderCapacity(report, kind) {
  const cols = capacityColumns(kind, report.workload.slo.percentile);
  const head = h("tr", {}, h("th", {}, "setup"), ...cols.map(([, label]) => h("th", {}, label)));
  const rows = report.plans.map((p) => h("tr", {class: p.pareto ? "pareto" : null},
    h("td", {}, (p.pareto ? "* " : "") + p.setup), ...cols.map(([key, , text]) => cell(p[key], text(p)))));
  $("#capacity-table").replaceChildren(head, ...rows);
  $("#capacity-summary").textContent = report.plans.length ?
    `${report.plans.length} setups on ${report.plans[0].engine}, cheapest first` :
    "no setup holds the model and meets the SLOs";
  // each row's warnings, then each GPU asked for that has no row, and why (the CLI's notes)
  $("#capacity-warnings").replaceChildren(...report.plans.flatMap((p) => p.warnings).map((w) => h("li", {}, w)),
    ...report.notes.map((n) => h("li", {}, "note: " + n)));
}

async function searchCapacity() {
  if (!state.scenario) return;
  const kind = $("#capacity-kind").value;
  $("#capacity-go").disabled = true;
  $("#capacity-summary").textContent = "simulating...";
  try {
    renderCapacity(await api("/api/capacity", capacityRequest()), kind);
  } catch (e) {
    $("#capacity-summary").textContent = e.message;
    $("#capacity-table").replaceChildren();
    $("#capacity-warnings").replaceChildren();
  } finally {
    $("#capacity-go").disabled = false;
  }
}

$("#capacity-go").addEventListener("click", searchCapacity);

// ---- start ---------------------------------------------------------------------------------------------
function wireExports() {
  document.querySelectorAll("[data-copy]").forEach((b) => b.addEventListener("click", () => {
    navigator.clipboard?.writeText(document.getElementById(b.dataset.copy).textContent);
  }));
  document.querySelectorAll("[data-download]").forEach((b) => b.addEventListener("click", () => {
    download(b.dataset.filename, document.getElementById(b.dataset.download).textContent);
  }));
  $("#launch-go").addEventListener("click", makeLaunch);
  $("#permalink").addEventListener("focus", (e) => e.target.select());
  $("#buy-go").addEventListener("click", compareBuy);
  for (const id of ["#objective", "#max-gpus", "#any-method", "#any-quant", "#grid-axis"]) {
    $(id).addEventListener("change", () => state.scenario && heavy(state.seq));
  }
}

// ---- a model's own config.json: uploaded (/api/upload?kind=config), the model field then carries its reference --
// The server reads it as `gpuplan estimate --model config.json` reads a local file: data only, no code from it runs.
function addConfigUpload() {
  const label = document.querySelector('.field[data-field="model"]');
  const model = document.getElementById("f-model");
  const input = h("input", {id: "f-model-config", type: "file", accept: ".json,application/json",
    "aria-label": "upload a model's config.json"});
  const status = h("span", {class: "hint", id: "f-model-config-status"});
  for (const ev of ["input", "change"]) input.addEventListener(ev, (e) => e.stopPropagation());
  input.addEventListener("change", async () => {
    const file = input.files[0];
    status.textContent = "";
    if (!file) return;
    if (file.size > state.maxUpload) {
      showError(`${file.name} is ${file.size.toLocaleString("en-US")} bytes; the page takes files up to ` +
        `${state.maxUpload.toLocaleString("en-US")} bytes`, "model");
      return;
    }
    status.textContent = "uploading...";
    try {
      const up = await api("/api/upload?" + new URLSearchParams({kind: "config", name: file.name}), file);
      model.value = up.ref;
      status.textContent = `${up.name}: ${up.bytes.toLocaleString("en-US")} bytes`;
    } catch (e) {
      status.textContent = "";
      showError(e.message, "model");
      return;
    }
    input.value = "";
    schedule();
  });
  label.after(h("label", {class: "field config-upload", for: input.id,
    title: "a model gpuplan does not bundle: its config.json, read as data (the weights are not needed)"},
  h("span", {class: "name"}, "or its config.json"), h("span", {class: "file"}, input, status)));
}

async function start() {
  const [form, models, gpus] = await Promise.all([api("/api/form"), api("/api/models"), api("/api/gpus")]);
  buildForm(form);
  addConfigUpload();
  for (const m of form.module_models) {
    for (const name of [m.name, ...m.names]) {
      state.kinds[name.toLowerCase()] = m.kind;
      state.reads[name.toLowerCase()] = m.reads;
    }
  }
  $("#list-models").replaceChildren(...models.map((m) => h("option", {value: m.name},
    `${m.family}, ${(m.params_total / 1e9).toFixed(1)}B`)), ...form.module_models.map((m) =>
    h("option", {value: m.names[0] || m.name}, `${m.kind}: ${m.name}, ${(m.params_total / 1e9).toFixed(2)}B`)));
  $("#list-gpus").replaceChildren(...gpus.map((g) => h("option", {value: g.id}, `${g.name}, ${g.usable_gib} GiB`)));
  // a permalink made before a field was renamed (framework -> stack) fills the field by its new name
  const params = Object.fromEntries([...new URLSearchParams(location.search)].map(([k, v]) => [form.renamed[k] || k, v]));
  fillForm(Object.keys(params).length ? params : DEFAULT_SCENARIO);
  wireExports();
  await update();
}

start().catch((e) => showError("the page could not start: " + e.message));
