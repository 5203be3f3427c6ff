/* The course website's one script of its own (website/conf.py loads it on every page).
 * Opened from disk (file://, the offline copy), a browser refuses the requests Sphinx's search
 * makes to show a snippet of each result page: show the results without snippets there. */
if (window.location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
  DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
}

/* A lesson's recipes moved to its cookbook page. A link to a section that is not on a lesson
 * page (an old link to a recipe) goes on to the same section of the cookbook page the lesson
 * links in its title cell; from a chapter's first cookbook page, on to its continuation
 * (10_speedups_recipes.html -> 10_speedups_inference_recipes.html), which it links. */
document.addEventListener("DOMContentLoaded", () => {
  const id = decodeURIComponent(window.location.hash.slice(1));
  if (!id || document.getElementById(id)) return;
  const page = window.location.pathname.match(/\/cookbook\/(\d\d_[a-z0-9_]+)_recipes\.html$/);
  const next = page
    ? (href) => href.startsWith(page[1] + "_") && href.endsWith("_recipes.html")
    : (href) => /(^|\/)cookbook\/\d\d_[a-z0-9_]+_recipes\.html$/.test(href);
  const link = Array.from(document.querySelectorAll("article a[href]")).find((a) =>
    next(a.getAttribute("href"))
  );
  if (link) window.location.replace(link.getAttribute("href") + "#" + id);
});

/* A pasted error message holds the reader's own sizes ("(64x400 and 256x10)"), which no page
 * holds, and the search wants every word of a query: drop the words made of numbers alone (or
 * of sizes like 64x400) before the search reads the query. */
(function () {
  if (!/\/search\.html$/.test(window.location.pathname)) return;
  const params = new URLSearchParams(window.location.search);
  const words = (params.get("q") || "").split(/\s+/).filter(Boolean);
  const kept = words.filter((w) => !/^[(\[]*[\d.,]+(x[\d.,]+)*[)\],.:;]*$/i.test(w));
  if (kept.length === 0 || kept.length === words.length) return;
  params.set("q", kept.join(" "));
  window.history.replaceState(null, "", "?" + params.toString() + window.location.hash);
})();
