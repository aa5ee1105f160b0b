// Click a figure of a cell's output to see it at the size of the window; click again (or press Escape) to close.
document.addEventListener("click", (event) => {
  const img = event.target.closest(".cell_output img");
  if (img) img.classList.toggle("dml-enlarged");
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape") document.querySelectorAll("img.dml-enlarged").forEach((img) => img.classList.remove("dml-enlarged"));
});
