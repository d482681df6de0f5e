// Grid interactions: a tooltip for the hovered (or focused) cell and a crosshair on its
// row and column. The page works without it: every cell is a link with an aria-label.
// A compact table's cells (compact_table.py) have neither: their tooltip is put together
// from the table's and the cell's data-* attributes, and a click opens the pair's page.
(function () {
  "use strict";
  const tooltip = document.getElementById("grid-tooltip");
  if (!tooltip) return;
  const FIELDS = ["check", "value", "status", "count", "time", "message"];
  let lit = [];

  function parseBand(band) {
    const parts = (band.dataset.tip || "").split("\n");
    const out = {};
    FIELDS.forEach((name, i) => { out[name] = parts[i] || ""; });
    out.status_code = band.dataset.status;
    out.classes = band.className.replace("band", "swatch");
    return out;
  }

  function line(band, active) {
    const b = parseBand(band);
    const row = document.createElement("div");
    row.className = "check" + (active ? " active" : "");
    const swatch = document.createElement("span");
    swatch.className = b.classes;
    const what = document.createElement("span");
    what.className = "what";
    what.textContent = `${b.check}: ${b.value} (${b.status})`;
    const facts = document.createElement("span");
    facts.className = "msg";
    facts.textContent = `${b.count} · ${b.time}`;
    row.append(swatch, what, facts);
    if (b.message) {
      const msg = document.createElement("span");
      msg.className = "msg";
      msg.textContent = b.message;
      row.append(msg);
    }
    return row;
  }

  function ageLine(td) {
    if (!td || !td.dataset.age) return null;
    const age = document.createElement("div");
    age.className = "age";
    const overdue = td.classList.contains("old") || td.classList.contains("o");
    age.textContent = `last measured ${td.dataset.age} ago${overdue ? " \u2014 overdue" : ""}`;
    return age;
  }

  function place(x, y) {
    tooltip.hidden = false;
    const box = tooltip.getBoundingClientRect();
    const left = Math.min(x + 14, window.innerWidth - box.width - 8);
    const top = y + 14 + box.height > window.innerHeight ? y - box.height - 10 : y + 14;
    tooltip.style.left = `${Math.max(4, left)}px`;
    tooltip.style.top = `${Math.max(4, top)}px`;
  }

  function show(cell, activeBand, x, y) {
    tooltip.replaceChildren();
    const head = document.createElement("div");
    head.className = "pair";
    head.textContent = `${cell.dataset.src} \u2192 ${cell.dataset.dst}`;
    tooltip.append(head);
    cell.querySelectorAll(".band").forEach((band) => tooltip.append(line(band, band === activeBand)));
    const age = ageLine(cell.parentElement);
    if (age) tooltip.append(age);
    place(x, y);
  }

  // A compact cell: its pair from the row's and the column's headers.
  function compactPair(td) {
    const table = td.closest("table");
    const heads = table.tHead.rows[table.tHead.rows.length - 1].cells;
    const src = td.parentElement.cells[0].textContent;
    const dst = heads[td.cellIndex] ? heads[td.cellIndex].textContent : "";
    return { table, src, dst };
  }

  function minuteText(minute) {
    const m = Number(minute);
    if (!m) return "never";
    return new Date(m * 60000).toISOString().slice(0, 16).replace("T", " ") + " UTC";
  }

  function showCompact(td, x, y) {
    const { table, src, dst } = compactPair(td);
    const checks = (table.dataset.checks || "").split("|");
    const statuses = (table.dataset.statuses || "").split("|");
    const values = (td.dataset.v || "").split(" ");
    const minutes = (td.dataset.m || "").split(" ");
    const counts = (td.dataset.f || "").split(" ");
    tooltip.replaceChildren();
    const head = document.createElement("div");
    head.className = "pair";
    head.textContent = `${src} \u2192 ${dst}`;
    tooltip.append(head);
    const bands = td.querySelectorAll("i");
    checks.forEach((check, i) => {
      const band = bands[i];
      const code = band ? Number((band.className.match(/s(\d)/) || [])[1]) : 4;
      const row = document.createElement("div");
      row.className = "check";
      const swatch = document.createElement("span");
      swatch.className = band ? band.className.replace(/s(\d)/, "swatch s$1") : "swatch s4";
      const what = document.createElement("span");
      what.className = "what";
      const value = band && values[i] && values[i] !== "-" ? `${values[i]} Gbps` : "no value";
      what.textContent = `${check}: ${value} (${statuses[code] || code})`;
      const facts = document.createElement("span");
      facts.className = "msg";
      const when = minuteText(minutes.length > 1 ? minutes[i] : minutes[0]);
      facts.textContent = band ? (counts[i] ? `${counts[i]} succeeded \u00b7 ${when}` : when) : "not run";
      row.append(swatch, what, facts);
      tooltip.append(row);
    });
    if (td.dataset.x) {
      const msg = document.createElement("div");
      msg.className = "msg";
      msg.textContent = td.dataset.x;
      tooltip.append(msg);
    }
    const alert = td.className.match(/alert-(\w+)/);
    if (alert) {
      const line = document.createElement("div");
      line.textContent = `alert: ${alert[1]}`;
      tooltip.append(line);
    }
    const age = ageLine(td);
    if (age) tooltip.append(age);
    place(x, y);
  }

  function compactCell(target) {
    const td = target.closest && target.closest("table.compact tbody td");
    return td && !td.classList.contains("x") ? td : null;
  }

  document.addEventListener("click", (event) => {
    const td = compactCell(event.target);
    if (!td) return;
    const { table, src, dst } = compactPair(td);
    const [head, middle, end] = (table.dataset.href || "").split("|");
    window.location.assign(`${head}${encodeURIComponent(src)}${middle}${encodeURIComponent(dst)}${end || ""}`);
  });


  function crosshair(td) {
    lit.forEach((el) => el.classList.remove("hl", "hl-cell"));
    lit = [];
    if (!td) return;
    const tr = td.parentElement;
    const table = td.closest("table");
    const col = td.cellIndex;
    tr.classList.add("hl");
    lit.push(tr);
    const header = table.tHead.rows[table.tHead.rows.length - 1].cells[col];
    if (header) { header.classList.add("hl"); lit.push(header); }
    for (const row of table.tBodies[0].rows) {
      const c = row.cells[col];
      if (c) { c.classList.add("hl"); lit.push(c); }
    }
    for (const c of tr.cells) { c.classList.add("hl"); lit.push(c); }
    td.classList.add("hl-cell");
    lit.push(td);
  }

  function hide() {
    tooltip.hidden = true;
    crosshair(null);
  }

  document.addEventListener("mousemove", (event) => {
    const compact = compactCell(event.target);
    if (compact) {
      showCompact(compact, event.clientX, event.clientY);
      if (!compact.classList.contains("hl-cell")) crosshair(compact);
      return;
    }
    const cell = event.target.closest && event.target.closest("a.cell");
    if (!cell) { if (!tooltip.hidden) hide(); return; }
    const band = event.target.closest(".band");
    show(cell, band, event.clientX, event.clientY);
    const td = cell.parentElement;
    if (!td.classList.contains("hl-cell")) crosshair(td);
  });
  document.addEventListener("focusin", (event) => {
    const cell = event.target.closest && event.target.closest("a.cell");
    if (!cell) return;
    const rect = cell.getBoundingClientRect();
    show(cell, null, rect.right, rect.bottom);
    crosshair(cell.parentElement);
  });
  document.addEventListener("focusout", hide);
  document.addEventListener("keydown", (event) => { if (event.key === "Escape") hide(); });
})();
