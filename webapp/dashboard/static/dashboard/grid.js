// Grid interactions: a tooltip for the hovered (or focused) cell and a crosshair on its
// row and column. The page works without it: every cell is a link with an aria-label.
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

  function show(cell, activeBand, x, y) {
    tooltip.replaceChildren();
    const head = document.createElement("div");
    head.className = "pair";
    head.textContent = `${cell.dataset.src} \u2192 ${cell.dataset.dst}`;
    tooltip.append(head);
    cell.querySelectorAll(".band").forEach((band) => tooltip.append(line(band, band === activeBand)));
    tooltip.hidden = false;
    const box = tooltip.getBoundingClientRect();
    const left = Math.min(x + 14, window.innerWidth - box.width - 8);
    const top = y + 14 + box.height > window.innerHeight ? y - box.height - 10 : y + 14;
    tooltip.style.left = `${Math.max(4, left)}px`;
    tooltip.style.top = `${Math.max(4, top)}px`;
  }

  function crosshair(td) {
    lit.forEach((el) => el.classList.remove("hl", "hl-cell"));
    lit = [];
    if (!td) return;
    const tr = td.parentElement;
    const table = td.closest("table");
    const col = td.cellIndex;
    tr.classList.add("hl");
    lit.push(tr);
    const header = table.tHead.rows[0].cells[col];
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
