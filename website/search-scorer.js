/* The course website's search scorer (`html_search_scorer` in website/conf.py).
 *
 * Sphinx's default weights, plus one rule: a result lands on the section that answers the query
 * and ranks by how well that section matches it. A page Sphinx found by its text is shown at its
 * best-matching section; a heading or an index entry Sphinx found keeps its own. Either gains
 * `Scorer.title` times the section's match:
 *
 * - A section's keys are the words of its heading (weight 1) and of its index entries: 0.8 for
 *   the API names it teaches and the errors it shows, 0.4 for a name only its code uses
 *   (helpers/authoring/sphinxext.py). A query word (as stemmed, 3 letters or more) that is only
 *   part of a key counts half: its start ("flop" in "flopcountermode"), its end after 3 letters
 *   or more ("loss" in "bceloss"), or anywhere in it for a word of 5 letters or more ("loader"
 *   in "dataloader"); "hang" is not found in "chang", the stem of "changes".
 * - Its match is the share of the query its keys hold, each query word weighted by its rarity
 *   among the sections' keys: "summary", in every chapter's "Summary" heading, counts little, so
 *   "model summary" leads to the recipe whose heading says "model" and whose code calls
 *   torchinfo's `summary`. The qualifiers of a dotted name count a quarter ("torch" and "utils"
 *   in torch.utils.checkpoint).
 * - An entry that holds the query, or that the query holds, as whole words (an API name, an error
 *   message pasted whole or in part), or that is the name a dotted query ends with, adds 1.
 * - The share of the heading's words that the query holds adds up to `focus`: of two headings
 *   that hold the query, the one most about it wins.
 * - An exercise, a solution, a summary or an old-code table (`recap`) matches half: a recipe
 *   answers better than a section that practises or sums it up.
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
  focus: 0.2,
  recap: /^(Exercise|Solution|Summary|Old code)\b/,

  // The query's sections, computed once per query: {query, sections: Map("file#id" -> section),
  // best: Map(file -> its best section)}; a section is {id, title, heading (its words), keys,
  // entries, match}.
  _cache: null,

  // The words of a text, stemmed as Sphinx stems them, each with its weight: a name in code
  // gives its parts as well (pack_padded_sequence: pack, pad, sequenc; FlopCounterMode: flop,
  // counter, mode), and the qualifiers of a dotted name count a quarter (torch.utils.checkpoint:
  // checkpoint 1, torch and util 0.25). `parts` weighs the parts of a name (camel case or
  // snake_case): a query's "OpenShift" is mostly about OpenShift, not about "open".
  terms: (text, parts = 1) => {
    const stemmer = new Stemmer();
    const found = new Map();
    const qualifiers = new Set();
    for (const dotted of text.match(/[\p{L}\p{N}_]+(?:\.[\p{L}\p{N}_]+)+/gu) || [])
      dotted.split(".").slice(0, -1).forEach((part) => qualifiers.add(part));
    for (const token of splitQuery(text)) {
      const weight = qualifiers.has(token) ? 0.25 : 1;
      const split = token.split(/_+|(?<=\p{Ll})(?=\p{Lu})/u);
      for (const word of split.length > 1 ? [token, ...split] : [token]) {
        const lower = word.toLowerCase();
        if (lower.length < 2 || stopwords.has(lower) || /^\d+$/.test(lower)) continue;
        const stem = stemmer.stemWord(lower);
        const counts = word === token ? weight : weight * parts;
        found.set(stem, Math.max(counts, found.get(stem) || 0));
      }
    }
    return found;
  },
  words: (text) => new Set(Scorer.terms(text).keys()),
  // Whether a query word (stemmed, 3 letters or more) is part of a longer key: its start, its end
  // after 3 letters or more ("loss" in "bceloss", "run" in "torchrun"), or anywhere for a word of
  // 5 letters or more ("loader" in "dataloader"), but not "hang" in "chang" (changes).
  inside: (key, word) =>
    key.startsWith(word) ||
    (key.endsWith(word) && key.length - word.length >= 3) ||
    (word.length > 4 && key.includes(word)),

  sections: (query) => {
    if (Scorer._cache && Scorer._cache.query === query) return Scorer._cache;
    const index = Search._index;
    const sections = new Map();
    const keep = (file, id, title) => {
      const key = `${file}#${id}`;
      if (!sections.has(key)) {
        const heading = Scorer.words(title);
        sections.set(key, { id, title, heading, keys: new Map(), entries: [] });
      }
      return sections.get(key);
    };
    const hold = (section, words, weight) => {
      for (const word of words)
        section.keys.set(word, Math.max(weight, section.keys.get(word) || 0));
    };
    for (const [title, places] of Object.entries(index.alltitles)) {
      const words = Scorer.words(title);
      for (const [file, id] of places) if (id) hold(keep(file, id, title), words, 1);
    }
    for (const [entry, places] of Object.entries(index.indexentries)) {
      const words = Scorer.words(entry);
      for (const [file, id, main] of places) {
        const section = sections.get(`${file}#${id}`);
        if (!section) continue;
        hold(section, words, main ? 0.8 : 0.4);
        section.entries.push(entry);
      }
    }
    // How much each query word counts: its weight × log(1 + sections / (1 + sections holding it)).
    const text = query.toLowerCase().replace(/\s+/g, " ").trim();
    const terms = Scorer.terms(query, 0.5);
    const words = [...terms.keys()];
    const held = (section, word) => {
      let best = 0;
      for (const [key, weight] of section.keys) {
        if (key === word) best = Math.max(best, weight);
        else if (word.length > 2 && Scorer.inside(key, word)) best = Math.max(best, weight / 2);
      }
      return best;
    };
    const holds = new Map([...sections.values()].map((s) => [s, words.map((w) => held(s, w))]));
    const rarity = words.map((_, i) => {
      const count = [...holds.values()].filter((h) => h[i] > 0).length;
      return terms.get(words[i]) * Math.log(1 + sections.size / (1 + count));
    });
    const total = rarity.reduce((a, b) => a + b, 0);
    // Whether `outer` holds `inner` from a word's start to a word's end (or on, for a long
    // `inner`: an error message as shown, cut short, in the whole message pasted).
    const within = (outer, inner) => {
      const end = inner.length >= 40 ? "" : "(?![\\p{L}\\p{N}_])";
      const escaped = inner.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      return new RegExp(`(?<![\\p{L}\\p{N}_])${escaped}${end}`, "u").test(outer);
    };
    // The names the query qualifies: "checkpoint" in "torch.utils.checkpoint".
    const names = (text.match(/[\p{L}\p{N}_]+(?:\.[\p{L}\p{N}_]+)+/gu) || []).map((dotted) =>
      dotted.split(".").pop(),
    );
    const whole = (entry) => {
      if (names.includes(entry)) return true;
      const bare = entry.replace(/^[\w.]+: /, ""); // an error without its type
      return [entry, bare].some(
        (e) =>
          (within(e, text) && (text.length >= 16 || 2 * text.length >= e.length)) ||
          (within(text, e) && (e.length >= 40 || 3 * e.length >= 2 * text.length)),
      );
    };
    const wholes = new Set(Object.keys(index.indexentries).filter(whole));
    const best = new Map();
    for (const [key, section] of sections) {
      const share = holds.get(section).reduce((sum, h, i) => sum + h * rarity[i], 0);
      const found = [...section.heading].filter((word) => words.includes(word)).length;
      const named = section.entries.some((entry) => wholes.has(entry));
      let match = (total ? share / total : 0) + (named ? 1 : 0);
      if (match > 0) match += (Scorer.focus * found) / Math.max(1, section.heading.size);
      section.match = Scorer.recap.test(section.title) ? match / 2 : match;
      const file = Number(key.split("#")[0]);
      if (section.match > (best.get(file)?.match || 0)) best.set(file, section);
    }
    Scorer._cache = { query, sections, best };
    return Scorer._cache;
  },

  score: (result) => {
    const [docname, , anchor, , score, , kind] = result;
    const query = new URLSearchParams(window.location.search).get("q") || "";
    const index = Search._index;
    const file = index.docnames.indexOf(docname);
    const { sections, best } = Scorer.sections(query);
    const section = anchor ? sections.get(`${file}${anchor}`) : kind === "text" && best.get(file);
    if (!section) return score;
    // "Page > Section", as Sphinx names a heading it found: the same section found twice (by
    // its heading, an entry and the page's text) is then listed once.
    result[1] = `${index.titles[file]} > ${section.title}`;
    result[2] = `#${section.id}`;
    return score + Scorer.title * section.match;
  },
};

/* A query that no page holds every word of (a name the course never writes, a GPU's name, a word
 * of a pasted message) would list nothing, as Sphinx's search wants every word. Then every page
 * that holds one of its words is a result, a word more found worth one more full-text match, and
 * the score above ranks the sections by the words they hold. */
if (typeof Search !== "undefined" && !Search.everyWordSearch) {
  Search.everyWordSearch = Search.performTermsSearch;
  Search.performTermsSearch = (searchTerms, excludedTerms) => {
    const strict = Search.everyWordSearch(searchTerms, excludedTerms);
    if (strict.length || searchTerms.size < 2) return strict;
    const found = new Map(); // file name -> [its best result, words found]
    for (const word of searchTerms) {
      for (const result of Search.everyWordSearch(new Set([word]), excludedTerms)) {
        const [best, words] = found.get(result[5]) || [result, 0];
        found.set(result[5], [result[4] > best[4] ? result : best, words + 1]);
      }
    }
    return [...found.values()].map(([result, words]) => {
      const copy = result.slice();
      copy[4] += Scorer.term * (words - 1);
      return copy;
    });
  };
}
