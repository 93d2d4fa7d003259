// The ask page: one question, two GraphQL requests to this server's /graphql. The first selects
// the answers without their rewritten questions, so they show as soon as the reader has them;
// the second selects `question`, `rewritten` and `rewriteStopped`, which makes the server run question
// disambiguation (the costliest stage), and fills in each answer's reading when it comes.
// No framework, no build step, nothing fetched from anywhere but this server. Every text from
// the server goes in through textContent, never as HTML.
'use strict';
(function () {
  var ANSWERS_QUERY = 'query Answers($q: String!) { ask(question: $q) { question ambiguous ambiguity answers { answer confidence evidence { id title text } } passages { id title text score } } }';
  var REWRITES_QUERY = 'query Rewrites($q: String!) { ask(question: $q) { answers { answer question rewritten rewriteStopped } } }';

  var byId = function (id) { return document.getElementById(id); };
  var form = byId('ask-form');
  var input = byId('question');
  var statusText = byId('status');
  var spinner = byId('spinner');
  var elapsed = byId('elapsed');
  var errorBox = byId('error');
  var results = byId('results');
  var resultsHeading = byId('results-heading');
  var summary = byId('summary');
  var answerList = byId('answers');
  var passages = byId('passages');
  var passagesSummary = byId('passages-summary');
  var passageList = byId('passage-list');

  /** The ask in progress: a newer one aborts it and its late replies are dropped. */
  var current = null;

  function make(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  var percent = function (p) { return Math.round(100 * p) + '%'; };
  var plural = function (n, one, many) { return n + ' ' + (n === 1 ? one : many); };
  var answerKey = function (answer) { return answer.trim().toLowerCase(); };

  // ---- Talking to the server -------------------------------------------------------------

  /** A failed request: each problem with its code (AMBIGQA_ERR_* from the GraphQL error's extensions). */
  function Failure(problems, retryAfter) {
    this.problems = problems;
    this.retryAfter = retryAfter;
  }

  async function post(query, variables, signal) {
    var response;
    try {
      response = await fetch('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ query: query, variables: variables }),
        signal: signal,
      });
    } catch (error) {
      if (signal.aborted) throw error;
      throw new Failure([{ code: 'NETWORK', message: 'the server could not be reached (' + error.message + '); is ambigqa serve still running?' }]);
    }
    var text = await response.text();
    var body = null;
    try { body = JSON.parse(text); } catch (_) { body = null; }
    var retryAfter = response.headers.get('retry-after');
    if (body && Array.isArray(body.errors) && body.errors.length > 0) {
      throw new Failure(body.errors.map(function (e) {
        return { code: (e.extensions && e.extensions.code) || body.code || 'GraphQL error', message: String(e.message) };
      }), retryAfter);
    }
    if (!response.ok) {
      // Fastify's own refusals (a body over the limit) are JSON of another shape: { code, message }.
      var message = body && body.message ? String(body.message) : (text.slice(0, 500) || response.statusText);
      throw new Failure([{ code: (body && body.code) || 'HTTP ' + response.status, message: message }], retryAfter);
    }
    if (!body || !body.data || !body.data.ask) throw new Failure([{ code: 'HTTP ' + response.status, message: 'the server answered with no answer set' }]);
    return body.data.ask;
  }

  // ---- What the page says it is doing ----------------------------------------------------

  var ticker = null;
  function setBusy(busy, message, since) {
    statusText.textContent = message;
    spinner.hidden = !busy;
    results.setAttribute('aria-busy', busy ? 'true' : 'false');
    clearInterval(ticker);
    elapsed.textContent = '';
    if (busy) {
      // The seconds count where screen readers do not read them (aria-hidden): once is enough.
      ticker = setInterval(function () {
        var s = Math.floor((performance.now() - since) / 1000);
        elapsed.textContent = s >= 1 ? s + ' s' : '';
      }, 250);
    }
  }

  function showError(failure, preface) {
    errorBox.replaceChildren();
    if (preface) errorBox.append(make('p', 'error-preface', preface));
    var problems = failure instanceof Failure ? failure.problems : [{ code: 'PAGE', message: String(failure && failure.message ? failure.message : failure) }];
    for (var i = 0; i < problems.length; i++) {
      var line = make('p', 'error-line');
      line.append(make('code', 'error-code', problems[i].code), ': ', problems[i].message);
      errorBox.append(line);
    }
    if (failure instanceof Failure && failure.retryAfter) errorBox.append(make('p', 'error-retry', 'The server asks to retry after ' + failure.retryAfter + ' s.'));
    errorBox.hidden = false;
  }

  function clearError() {
    errorBox.hidden = true;
    errorBox.replaceChildren();
  }

  // ---- The answer span, marked in its passage -------------------------------------------

  var WORD = /[\p{L}\p{N}]+/gu;
  var ARTICLE = /^(a|an|the)$/i;
  var escape = function (s) { return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); };

  /**
   * The answers as one pattern over words, whatever the punctuation and case between them (the
   * server matches answers in passages after the same normalisation), longest first.
   */
  function answerPattern(answers) {
    var alternatives = answers.map(function (answer) {
      var words = answer.match(WORD) || [];
      while (words.length > 1 && ARTICLE.test(words[0])) words = words.slice(1);
      return words.map(escape).join('[^\\p{L}\\p{N}]+');
    }).filter(function (a) { return a.length > 0; });
    if (alternatives.length === 0) return null;
    alternatives.sort(function (a, b) { return b.length - a.length; });
    return new RegExp('(?<![\\p{L}\\p{N}])(?:' + alternatives.join('|') + ')(?![\\p{L}\\p{N}])', 'giu');
  }

  /** `text` with every match of `pattern` in a <mark>. */
  function marked(text, pattern) {
    var fragment = document.createDocumentFragment();
    var last = 0;
    if (pattern) {
      pattern.lastIndex = 0;
      var m;
      while ((m = pattern.exec(text)) !== null) {
        fragment.append(text.slice(last, m.index), make('mark', '', m[0]));
        last = m.index + m[0].length;
      }
    }
    fragment.append(text.slice(last));
    return fragment;
  }

  function passageView(tag, passage, pattern, note) {
    var view = make(tag, 'passage');
    var title = make('p', 'passage-title');
    title.append(make('strong', '', ''));
    title.firstChild.append(marked(passage.title, pattern));
    if (note) title.append(make('span', 'passage-note', note));
    view.append(title, make('p', 'passage-text'));
    view.lastChild.append(marked(passage.text, pattern));
    return view;
  }

  // ---- The answer set --------------------------------------------------------------------

  function describe(set) {
    var n = set.answers.length;
    var p = set.ambiguity === null || set.ambiguity === undefined ? '' : percent(set.ambiguity);
    if (n === 0) return 'No answer found: the reader trusts no answer in the passages it read. The passages retrieved are below.';
    if (n === 1) return 'One answer: this question has one reading.' + (p ? ' (Probability that it has more than one answer: ' + p + '.)' : '');
    if (set.ambiguous) return 'This question is ambiguous: it has several readings. Each of the ' + n + ' answers below comes with the reading it answers.' + (p ? ' (Probability that it has more than one answer: ' + p + '.)' : '');
    return n + ' answers. The question looks unambiguous' + (p ? ' (probability that it has more than one answer: ' + p + ')' : '') + ', so they may be competing answers to one reading.';
  }

  function openPassages(event) {
    event.preventDefault();
    passages.open = true;
    passagesSummary.focus();
    passagesSummary.scrollIntoView({ block: 'start' });
  }

  /** One card per answer; returns each card's reading line, which the rewrites fill in. */
  function renderAnswers(set) {
    answerList.replaceChildren();
    var readings = [];
    set.answers.forEach(function (a, i) {
      var card = make('li', 'answer');
      card.id = 'answer-' + (i + 1);
      var pattern = answerPattern([a.answer]);
      card.append(make('h3', 'answer-text', a.answer));

      var reading = make('p', 'reading');
      reading.append(make('span', 'label', 'Question it answers: '));
      var readingText = make('span', 'reading-text');
      reading.append(readingText);
      if (set.answers.length === 1) {
        readingText.textContent = set.question;
        reading.append(make('span', 'reading-note', ' (as asked: the question has one answer)'));
      } else {
        readingText.textContent = 'rewriting the question for this answer…';
        reading.classList.add('pending');
      }
      card.append(reading);
      readings.push({ answer: a.answer, line: reading, text: readingText });

      var confidence = make('div', 'confidence');
      var bar = make('span', 'bar');
      bar.setAttribute('aria-hidden', 'true');
      var fill = make('span', 'fill');
      fill.style.width = Math.max(0, Math.min(100, 100 * a.confidence)).toFixed(1) + '%';
      bar.append(fill);
      confidence.append(make('span', 'label', 'Confidence '), bar, make('span', 'value', percent(a.confidence)));
      card.append(confidence);

      var evidence = make('div', 'evidence');
      evidence.append(make('h4', '', a.evidence.length > 1 ? 'Evidence (' + a.evidence.length + ' passages)' : 'Evidence'));
      if (a.evidence.length > 0) evidence.append(passageView('blockquote', a.evidence[0], pattern));
      if (a.evidence.length > 1) {
        var more = make('details', 'more-evidence');
        more.append(make('summary', '', plural(a.evidence.length - 1, 'more passage', 'more passages') + ' with this answer'));
        for (var j = 1; j < a.evidence.length; j++) more.append(passageView('blockquote', a.evidence[j], pattern));
        evidence.append(more);
      }
      card.append(evidence);

      var used = new Set(a.evidence.map(function (p) { return p.id; }));
      var others = set.passages.filter(function (p) { return !used.has(p.id); }).length;
      var link = make('a', 'see-passages', 'See the other passages retrieved (' + others + ')');
      link.href = '#passages';
      link.addEventListener('click', openPassages);
      card.append(link);
      answerList.append(card);
    });
    return readings;
  }

  function renderPassages(set) {
    passageList.replaceChildren();
    // Which answers each passage is evidence for: those are marked in it.
    var answersOf = new Map();
    set.answers.forEach(function (a) {
      a.evidence.forEach(function (p) {
        if (!answersOf.has(p.id)) answersOf.set(p.id, []);
        answersOf.get(p.id).push(a.answer);
      });
    });
    set.passages.forEach(function (p, i) {
      var answers = answersOf.get(p.id) || [];
      var note = ' · rank ' + (i + 1) + (typeof p.score === 'number' ? ', score ' + p.score.toFixed(2) : '') + (answers.length ? ' · evidence for ' + answers.join(', ') : '');
      passageList.append(passageView('li', p, answerPattern(answers), note));
    });
    passagesSummary.textContent = 'Show the ' + plural(set.passages.length, 'passage', 'passages') + ' retrieved';
  }

  function render(set) {
    resultsHeading.textContent = 'Answers to “' + set.question + '”';
    summary.textContent = describe(set);
    var readings = renderAnswers(set);
    renderPassages(set);
    passages.open = set.answers.length === 0;
    results.hidden = false;
    return readings;
  }

  /** The second request's rewrites, matched to the cards by answer text. */
  function applyRewrites(readings, prompt, rewrites) {
    var byAnswer = new Map(rewrites.answers.map(function (a) { return [answerKey(a.answer), a]; }));
    readings.forEach(function (r) {
      var got = byAnswer.get(answerKey(r.answer));
      r.line.classList.remove('pending');
      r.text.textContent = got ? got.question : prompt;
      if (got && got.rewritten) r.line.classList.add('rewritten');
      else r.line.append(make('span', 'reading-note', !got ? ' (as asked: no rewrite for this answer)'
        : got.rewriteStopped ? ' (as asked: the server\'s time ran out before this rewrite)' : ' (as asked: no rewrite passed the checks)'));
    });
  }

  function failRewrites(readings, prompt) {
    readings.forEach(function (r) {
      if (!r.line.classList.contains('pending')) return;
      r.line.classList.remove('pending');
      r.text.textContent = prompt;
      r.line.append(make('span', 'reading-note', ' (as asked: the rewrite failed, see the message above)'));
    });
  }

  // ---- Asking ----------------------------------------------------------------------------

  async function ask(question) {
    if (current) current.controller.abort();
    var me = { controller: new AbortController(), started: performance.now() };
    current = me;
    var signal = me.controller.signal;
    clearError();
    history.replaceState(null, '', question ? '?q=' + encodeURIComponent(question) : location.pathname);
    setBusy(true, 'Finding answers: retrieving passages and reading them…', me.started);
    var set;
    try {
      set = await post(ANSWERS_QUERY, { q: question }, signal);
    } catch (error) {
      if (current !== me) return;
      results.hidden = true;
      setBusy(false, 'The question was not answered.');
      showError(error);
      return;
    }
    if (current !== me) return;
    var readings = render(set);
    var found = set.answers.length === 0 ? 'No answer found.' : plural(set.answers.length, 'answer', 'answers') + ' found.';
    // The server rewrites only sets of two or more; one answer keeps the question as asked.
    if (set.answers.length < 2) { setBusy(false, found); return; }
    setBusy(true, found + ' Rewriting the question for each answer…', me.started);
    try {
      var rewrites = await post(REWRITES_QUERY, { q: question }, signal);
      if (current !== me) return;
      applyRewrites(readings, set.question, rewrites);
      setBusy(false, found + ' Each shows the question it answers.');
    } catch (error) {
      if (current !== me) return;
      failRewrites(readings, set.question);
      setBusy(false, found + ' The questions could not be rewritten.');
      showError(error, 'The answers stand, but rewriting their questions failed:');
    }
  }

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    ask(input.value.trim());
  });
  document.querySelectorAll('button.example').forEach(function (button) {
    button.addEventListener('click', function () {
      input.value = button.getAttribute('data-question');
      ask(input.value);
    });
  });
  // A link to the page with ?q= asks at once (the page writes the question there as it asks).
  var initial = new URLSearchParams(location.search).get('q');
  if (initial) {
    input.value = initial;
    ask(initial.trim());
  }
})();
