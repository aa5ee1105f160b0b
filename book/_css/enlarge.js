// Click a figure of a cell's output to see it at the size of the window; click again (or press Escape) to close.
// Where the window is narrower than the figure (a phone), the click opens the figure at its own size in a box that
// pans instead, since fitting it to the window would not enlarge it. A figure the column shrinks says so below it.
function close() {
  document.querySelectorAll("img.dml-enlarged").forEach((img) => img.classList.remove("dml-enlarged"));
  document.querySelectorAll(".dml-pan").forEach((box) => box.remove());
}

document.addEventListener("click", (event) => {
  if (event.target.closest(".dml-pan")) return close();
  const img = event.target.closest(".cell_output img");
  if (!img) return;
  if (img.classList.contains("dml-enlarged") || img.naturalWidth <= window.innerWidth) {
    img.classList.toggle("dml-enlarged");
    return;
  }
  const box = document.createElement("div");
  box.className = "dml-pan";
  box.appendChild(img.cloneNode());
  document.body.appendChild(box);
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape") close();
});

function hint() {
  for (const img of document.querySelectorAll(".cell_output img")) {
    const shrunk = img.naturalWidth > 1.25 * img.clientWidth && img.clientWidth > 0;
    const next = img.nextElementSibling;
    const has = next !== null && next.classList.contains("dml-hint");
    if (shrunk && !has) img.insertAdjacentHTML("afterend", '<span class="dml-hint">Click to enlarge.</span>');
    if (!shrunk && has) next.remove();
  }
}
window.addEventListener("load", hint);
window.addEventListener("resize", hint);
document.addEventListener("toggle", hint, true);
