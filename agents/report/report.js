(() => {
  const $ = (id) => document.getElementById(id);
  const filter = $("filter"), status = $("status");
  $("controls").hidden = false;
  const apply = () => {
    const text = filter.value.trim().toLowerCase(), want = status.value;
    for (const el of document.querySelectorAll("[data-search]")) {
      const ok = (!text || el.dataset.search.includes(text)) && (!want || el.dataset.status === want);
      el.classList.toggle("filtered", !ok);
    }
    if (text || want) for (const g of document.querySelectorAll("details.group")) g.open = true;
  };
  filter.addEventListener("input", apply);
  status.addEventListener("change", apply);
  const fold = (open) => () => { for (const d of document.querySelectorAll("details")) d.open = open; };
  $("expand").addEventListener("click", fold(true));
  $("collapse").addEventListener("click", fold(false));
  const reveal = () => {
    const id = decodeURIComponent(location.hash.slice(1));
    const el = id && document.getElementById(id);
    if (!el) return;
    for (let d = el.closest("details"); d; d = d.parentElement.closest("details")) d.open = true;
    el.scrollIntoView();
  };
  addEventListener("hashchange", reveal);
  reveal();
})();
