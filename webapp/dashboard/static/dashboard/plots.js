// Draw every figure the server prepared: <div data-figure="ID"> + <script id="ID"> (JSON).
(function () {
  "use strict";
  document.querySelectorAll("[data-figure]").forEach((el) => {
    const source = document.getElementById(el.dataset.figure);
    if (!source || typeof Plotly === "undefined") return;
    const figure = JSON.parse(source.textContent);
    Plotly.newPlot(el, figure.data, figure.layout, {
      responsive: true,
      displaylogo: false,
      modeBarButtonsToRemove: ["select2d", "lasso2d"],
    }).then(() => el.setAttribute("data-rendered", "true"));
  });
})();
