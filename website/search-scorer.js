/* The course website's search scorer (`html_search_scorer` in website/conf.py).
 *
 * Sphinx's default weights, plus one rule: a page found by its text is shown at the section
 * whose heading holds every word of the query (the shortest such heading), and ranks above
 * pages where the words only appear somewhere in the text. "view size is not compatible" then
 * leads to the recipe that fixes that error, not to the first page that happens to use the words.
 */
var Scorer = {
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,

  score: (result) => {
    const [docname, , anchor, , score, , kind] = result;
    if (anchor || kind !== "text") return score;
    const query = new URLSearchParams(window.location.search).get("q") || "";
    const words = query
      .toLowerCase()
      .split(/[^\p{L}\p{N}_]+/u)
      .filter((word) => word.length > 1 && !stopwords.has(word));
    if (words.length === 0) return score;
    const index = Search._index;
    const file = index.docnames.indexOf(docname);
    let best = null;
    for (const [title, places] of Object.entries(index.alltitles)) {
      const lower = title.toLowerCase();
      if (!words.every((word) => lower.includes(word))) continue;
      for (const [where, id] of places) {
        if (where === file && id && (best === null || title.length < best[0].length)) {
          best = [title, id];
        }
      }
    }
    if (best === null) return score;
    result[1] = `${index.titles[file]} > ${best[0]}`;
    result[2] = `#${best[1]}`;
    return score + Scorer.title;
  },
};
