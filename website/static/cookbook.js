/* The course website's one script of its own (website/conf.py loads it on every page).
 * Opened from disk (file://, the offline copy), a browser refuses the requests Sphinx's search
 * makes to show a snippet of each result page: show the results without snippets there. */
if (window.location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
  DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
}
