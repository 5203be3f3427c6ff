/* The course website's one script of its own (website/conf.py loads it on every page).
 * Opened from disk (file://, the offline copy), a browser refuses the requests Sphinx's search
 * makes to show a snippet of each result page: show the results without snippets there. */
if (window.location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
  DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
}

/* A lesson's recipes moved to its cookbook page. A link to a section that is not on a lesson
 * page (an old link to a recipe) goes on to the same section of the cookbook page the lesson
 * links in its title cell. */
document.addEventListener("DOMContentLoaded", () => {
  const id = decodeURIComponent(window.location.hash.slice(1));
  if (!id || document.getElementById(id)) return;
  const link = Array.from(document.querySelectorAll("article a[href]")).find((a) =>
    /(^|\/)cookbook\/\d\d_[a-z0-9_]+_recipes\.html$/.test(a.getAttribute("href"))
  );
  if (link) window.location.replace(link.getAttribute("href") + "#" + id);
});
