// Lucene 8 BM25 reference peer for the retrieval benchmark.
//
// Built by scripts/lucene-peer against Debian's liblucene8-java jars
// (lucene-core + lucene-analyzers-common) and driven by bench/lucene-peer.ts.
//
// Commands:
//   index  [--k1 F] [--b F] [--ram-mb N] <passages.jsonl> <indexDir>
//   search [--k1 F] [--b F] [--warmup N] [--dedupe-terms] <indexDir> <questions.txt> <k> <out.jsonl>
//   analyze <text...>       (or `analyze -` to read the text from stdin as UTF-8)
//
// Everything printed on stdout is UTF-8; progress/diagnostics go to stderr.

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.SerialMergeScheduler;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;

public final class LuceneBm25 {
  private static final String F_ID = "id";
  private static final String F_TITLE = "title";
  private static final String F_TEXT = "text";
  private static final Set<String> ID_ONLY = Collections.singleton(F_ID);

  private static final PrintStream OUT =
      new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);

  /** Parsed command line: flags anywhere, the rest positional. */
  private static final class Args {
    float k1 = 0.9f;
    float b = 0.4f;
    double ramMb = 256.0;
    int warmup = 50;
    boolean dedupeTerms = false;
    final List<String> pos = new ArrayList<>();

    static Args parse(String[] argv, int from) {
      Args a = new Args();
      for (int i = from; i < argv.length; i++) {
        String s = argv[i];
        switch (s) {
          case "--k1": a.k1 = Float.parseFloat(need(argv, ++i, s)); break;
          case "--b": a.b = Float.parseFloat(need(argv, ++i, s)); break;
          case "--ram-mb": a.ramMb = Double.parseDouble(need(argv, ++i, s)); break;
          case "--warmup": a.warmup = Integer.parseInt(need(argv, ++i, s)); break;
          case "--dedupe-terms": a.dedupeTerms = true; break;
          default:
            if (s.startsWith("--")) throw new IllegalArgumentException("unknown flag " + s);
            a.pos.add(s);
        }
      }
      return a;
    }

    private static String need(String[] argv, int i, String flag) {
      if (i >= argv.length) throw new IllegalArgumentException(flag + " needs a value");
      return argv[i];
    }
  }

  public static void main(String[] argv) throws Exception {
    if (argv.length == 0) usage(null);
    try {
      String cmd = argv[0];
      switch (cmd) {
        case "index": {
          Args a = Args.parse(argv, 1);
          if (a.pos.size() != 2) usage("index takes <passages.jsonl> <indexDir>");
          index(Paths.get(a.pos.get(0)), Paths.get(a.pos.get(1)), a);
          break;
        }
        case "search": {
          Args a = Args.parse(argv, 1);
          if (a.pos.size() != 4) usage("search takes <indexDir> <questions.txt> <k> <out.jsonl>");
          int k = Integer.parseInt(a.pos.get(2));
          if (k < 1) usage("k must be >= 1");
          search(Paths.get(a.pos.get(0)), Paths.get(a.pos.get(1)), k, Paths.get(a.pos.get(3)), a);
          break;
        }
        case "analyze": {
          String text;
          if (argv.length == 2 && argv[1].equals("-")) {
            text = new String(System.in.readAllBytes(), StandardCharsets.UTF_8);
          } else {
            text = String.join(" ", Arrays.asList(argv).subList(1, argv.length));
          }
          try (Analyzer an = new EnglishAnalyzer()) {
            for (String t : analyze(an, F_TEXT, text)) OUT.println(t);
          }
          break;
        }
        default:
          usage("unknown command " + cmd);
      }
    } catch (IllegalArgumentException e) {
      usage(e.getMessage());
    }
    OUT.flush();
  }

  private static void usage(String err) {
    if (err != null) System.err.println("LuceneBm25: " + err);
    System.err.println(
        "usage:\n"
            + "  LuceneBm25 index  [--k1 F] [--b F] [--ram-mb N] <passages.jsonl> <indexDir>\n"
            + "  LuceneBm25 search [--k1 F] [--b F] [--warmup N] [--dedupe-terms] <indexDir> <questions.txt> <k> <out.jsonl>\n"
            + "  LuceneBm25 analyze <text...> | analyze -   (stdin)");
    System.exit(2);
  }

  // ---------------------------------------------------------------- analysis

  static List<String> analyze(Analyzer an, String field, String text) throws IOException {
    List<String> out = new ArrayList<>();
    try (TokenStream ts = an.tokenStream(field, text)) {
      CharTermAttribute term = ts.addAttribute(CharTermAttribute.class);
      ts.reset();
      while (ts.incrementToken()) out.add(term.toString());
      ts.end();
    }
    return out;
  }

  // ---------------------------------------------------------------- index

  private static void index(Path jsonl, Path indexDir, Args a) throws IOException {
    Files.createDirectories(indexDir);
    long t0 = System.nanoTime();
    long n = 0;
    int segmentsBeforeMerge;
    long t1, t2, t3;
    try (Analyzer an = new EnglishAnalyzer();
        Directory dir = FSDirectory.open(indexDir)) {
      IndexWriterConfig cfg = new IndexWriterConfig(an);
      cfg.setOpenMode(IndexWriterConfig.OpenMode.CREATE);
      cfg.setSimilarity(new BM25Similarity(a.k1, a.b));
      cfg.setRAMBufferSizeMB(a.ramMb);
      cfg.setMergeScheduler(new SerialMergeScheduler()); // single-threaded, merges included
      try (IndexWriter w = new IndexWriter(dir, cfg);
          BufferedReader r = Files.newBufferedReader(jsonl, StandardCharsets.UTF_8)) {
        Document doc = new Document();
        StringField fId = new StringField(F_ID, "", Field.Store.YES);
        TextField fTitle = new TextField(F_TITLE, "", Field.Store.NO);
        TextField fText = new TextField(F_TEXT, "", Field.Store.NO);
        doc.add(fId);
        doc.add(fTitle);
        doc.add(fText);
        String line;
        long lineNo = 0;
        while ((line = r.readLine()) != null) {
          lineNo++;
          if (line.isBlank()) continue;
          String[] p;
          try {
            p = MiniJson.parsePassage(line);
          } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(jsonl + ":" + lineNo + ": " + e.getMessage());
          }
          fId.setStringValue(p[0]);
          fTitle.setStringValue(p[1]);
          fText.setStringValue(p[2]);
          w.addDocument(doc);
          n++;
        }
        t1 = System.nanoTime();
        w.commit();
        t2 = System.nanoTime();
        segmentsBeforeMerge = segmentCount(dir);
        w.forceMerge(1);
        w.commit();
        t3 = System.nanoTime();
      }
    }
    long t4 = System.nanoTime();
    long bytes = dirBytes(indexDir);
    OUT.println(
        "{\"passages\": " + n
            + ", \"seconds\": " + secs(t4 - t0)
            + ", \"indexBytes\": " + bytes
            + ", \"secondsWithoutMerge\": " + secs(t2 - t0)
            + ", \"addSeconds\": " + secs(t1 - t0)
            + ", \"mergeSeconds\": " + secs(t3 - t2)
            + ", \"segmentsBeforeMerge\": " + segmentsBeforeMerge
            + ", \"k1\": " + a.k1 + ", \"b\": " + a.b
            + ", \"lucene\": " + MiniJson.quote(org.apache.lucene.util.Version.LATEST.toString())
            + "}");
  }

  private static int segmentCount(Directory dir) throws IOException {
    try (DirectoryReader r = DirectoryReader.open(dir)) {
      return r.leaves().size();
    }
  }

  private static long dirBytes(Path d) throws IOException {
    long total = 0;
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(d)) {
      for (Path p : ds) if (Files.isRegularFile(p)) total += Files.size(p);
    }
    return total;
  }

  private static String secs(long nanos) {
    return String.format(Locale.ROOT, "%.4f", nanos / 1e9);
  }

  // ---------------------------------------------------------------- search

  /** most_fields: SHOULD TermQuery(title:t) + TermQuery(text:t) for each analyzed term. */
  static Query buildQuery(List<String> terms, boolean dedupe) {
    Iterable<String> ts = dedupe ? new LinkedHashSet<>(terms) : terms;
    BooleanQuery.Builder bq = new BooleanQuery.Builder();
    for (String t : ts) {
      bq.add(new TermQuery(new Term(F_TITLE, t)), BooleanClause.Occur.SHOULD);
      bq.add(new TermQuery(new Term(F_TEXT, t)), BooleanClause.Occur.SHOULD);
    }
    return bq.build();
  }

  private static void search(Path indexDir, Path questionsFile, int k, Path outFile, Args a) throws IOException {
    List<String> questions = new ArrayList<>();
    try (BufferedReader r = Files.newBufferedReader(questionsFile, StandardCharsets.UTF_8)) {
      String line;
      while ((line = r.readLine()) != null) questions.add(line);
    }
    BooleanQuery.setMaxClauseCount(Math.max(BooleanQuery.getMaxClauseCount(), 1 << 16));
    try (Analyzer an = new EnglishAnalyzer();
        Directory dir = FSDirectory.open(indexDir);
        DirectoryReader reader = DirectoryReader.open(dir)) {
      IndexSearcher searcher = new IndexSearcher(reader);
      searcher.setSimilarity(new BM25Similarity(a.k1, a.b));
      searcher.setQueryCache(null); // every timed query is computed, never served from a cache

      Query[] queries = new Query[questions.size()];
      double[] analyzeMs = new double[questions.size()];
      for (int i = 0; i < queries.length; i++) {
        long s = System.nanoTime();
        queries[i] = buildQuery(analyze(an, F_TEXT, questions.get(i)), a.dedupeTerms);
        analyzeMs[i] = (System.nanoTime() - s) / 1e6;
      }

      // Warm-up (JIT, page cache): same work as the timed pass, results discarded.
      int warm = Math.min(a.warmup, queries.length);
      long sink = 0;
      for (int i = 0; i < warm; i++) {
        TopDocs td = searcher.search(queries[i], k);
        for (ScoreDoc sd : td.scoreDocs) sink += searcher.doc(sd.doc, ID_ONLY).get(F_ID).length();
      }

      double[] ms = new double[queries.length];
      try (BufferedWriter w = Files.newBufferedWriter(outFile, StandardCharsets.UTF_8)) {
        StringBuilder sb = new StringBuilder(4096);
        for (int i = 0; i < queries.length; i++) {
          long s = System.nanoTime();
          TopDocs td = searcher.search(queries[i], k);
          String[] ids = new String[td.scoreDocs.length];
          for (int j = 0; j < ids.length; j++) ids[j] = searcher.doc(td.scoreDocs[j].doc, ID_ONLY).get(F_ID);
          ms[i] = (System.nanoTime() - s) / 1e6;

          sb.setLength(0);
          sb.append("{\"ids\": [");
          for (int j = 0; j < ids.length; j++) {
            if (j > 0) sb.append(", ");
            sb.append(MiniJson.quote(ids[j]));
          }
          sb.append("], \"scores\": [");
          for (int j = 0; j < ids.length; j++) {
            if (j > 0) sb.append(", ");
            sb.append(Float.toString(td.scoreDocs[j].score));
          }
          sb.append("], \"ms\": ").append(String.format(Locale.ROOT, "%.4f", ms[i]));
          sb.append(", \"analyzeMs\": ").append(String.format(Locale.ROOT, "%.4f", analyzeMs[i]));
          sb.append("}\n");
          w.write(sb.toString());
        }
      }
      double[] sorted = ms.clone();
      Arrays.sort(sorted);
      double sum = 0;
      for (double v : ms) sum += v;
      OUT.println(
          "{\"queries\": " + ms.length
              + ", \"p50\": " + fmt(percentile(sorted, 0.50))
              + ", \"p99\": " + fmt(percentile(sorted, 0.99))
              + ", \"mean\": " + fmt(ms.length == 0 ? 0 : sum / ms.length)
              + ", \"max\": " + fmt(sorted.length == 0 ? 0 : sorted[sorted.length - 1])
              + ", \"warmup\": " + warm
              + ", \"k\": " + k
              + ", \"docs\": " + reader.numDocs()
              + ", \"k1\": " + a.k1 + ", \"b\": " + a.b
              + "}");
      if (sink == 42) System.err.print(""); // keep the warm-up from being optimised away
    }
  }

  /** Nearest-rank percentile of an ascending array (0 when empty). */
  static double percentile(double[] sorted, double p) {
    if (sorted.length == 0) return 0;
    int rank = (int) Math.ceil(p * sorted.length);
    return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
  }

  private static String fmt(double v) {
    return String.format(Locale.ROOT, "%.4f", v);
  }

  // ---------------------------------------------------------------- JSON

  /** Just enough JSON: one flat object per line, string values, standard escapes. */
  static final class MiniJson {
    private final String s;
    private int i;

    private MiniJson(String s) {
      this.s = s;
    }

    /** Returns {id, title, text}; missing title/text become "", a missing id is an error. */
    static String[] parsePassage(String line) {
      MiniJson p = new MiniJson(line);
      String id = null, title = "", text = "";
      p.ws();
      p.expect('{');
      p.ws();
      if (p.peek() == '}') {
        p.i++;
      } else {
        while (true) {
          p.ws();
          String key = p.string();
          p.ws();
          p.expect(':');
          p.ws();
          String val = p.value();
          switch (key) {
            case "id": id = val; break;
            case "title": title = val == null ? "" : val; break;
            case "text": text = val == null ? "" : val; break;
            default: break;
          }
          p.ws();
          char c = p.next();
          if (c == '}') break;
          if (c != ',') throw p.err("expected ',' or '}'");
        }
      }
      p.ws();
      if (p.i != p.s.length()) throw p.err("trailing characters");
      if (id == null) throw new IllegalArgumentException("passage without a string \"id\"");
      return new String[] {id, title, text};
    }

    /** A value: strings are returned decoded, numbers as their literal text, others skipped (null). */
    private String value() {
      char c = peek();
      if (c == '"') return string();
      if (c == '-' || (c >= '0' && c <= '9')) {
        int st = i;
        while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
        return s.substring(st, i);
      }
      if (s.startsWith("true", i)) { i += 4; return null; }
      if (s.startsWith("false", i)) { i += 5; return null; }
      if (s.startsWith("null", i)) { i += 4; return null; }
      if (c == '{' || c == '[') { skipNested(); return null; }
      throw err("unexpected value");
    }

    private void skipNested() {
      int depth = 0;
      do {
        char c = peek();
        if (c == '"') { string(); continue; }
        if (c == '{' || c == '[') depth++;
        else if (c == '}' || c == ']') depth--;
        i++;
      } while (depth > 0);
    }

    private String string() {
      expect('"');
      StringBuilder sb = null;
      int st = i;
      while (true) {
        if (i >= s.length()) throw err("unterminated string");
        char c = s.charAt(i);
        if (c == '"') {
          String out = sb == null ? s.substring(st, i) : sb.append(s, st, i).toString();
          i++;
          return out;
        }
        if (c == '\\') {
          if (sb == null) sb = new StringBuilder();
          sb.append(s, st, i);
          i++;
          char e = next();
          switch (e) {
            case '"': sb.append('"'); break;
            case '\\': sb.append('\\'); break;
            case '/': sb.append('/'); break;
            case 'b': sb.append('\b'); break;
            case 'f': sb.append('\f'); break;
            case 'n': sb.append('\n'); break;
            case 'r': sb.append('\r'); break;
            case 't': sb.append('\t'); break;
            case 'u': {
              // UTF-16 code unit; surrogate pairs (\\uD83D\\uDE00) combine naturally in a Java String.
              if (i + 4 > s.length()) throw err("short \\u escape");
              int cp = 0;
              for (int j = 0; j < 4; j++) {
                int d = Character.digit(s.charAt(i + j), 16);
                if (d < 0) throw err("bad \\u escape");
                cp = cp * 16 + d;
              }
              i += 4;
              sb.append((char) cp);
              break;
            }
            default: throw err("bad escape \\" + e);
          }
          st = i;
        } else {
          i++;
        }
      }
    }

    private void ws() {
      while (i < s.length()) {
        char c = s.charAt(i);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\uFEFF') i++;
        else break;
      }
    }

    private char peek() {
      if (i >= s.length()) throw err("unexpected end of line");
      return s.charAt(i);
    }

    private char next() {
      char c = peek();
      i++;
      return c;
    }

    private void expect(char c) {
      if (next() != c) {
        i--;
        throw err("expected '" + c + "'");
      }
    }

    private IllegalArgumentException err(String msg) {
      return new IllegalArgumentException("bad JSON at column " + (i + 1) + ": " + msg);
    }

    /** JSON string literal; escapes control characters, quote, backslash and lone surrogates. */
    static String quote(String v) {
      StringBuilder sb = new StringBuilder(v.length() + 2);
      sb.append('"');
      for (int j = 0; j < v.length(); j++) {
        char c = v.charAt(j);
        switch (c) {
          case '"': sb.append("\\\""); break;
          case '\\': sb.append("\\\\"); break;
          case '\n': sb.append("\\n"); break;
          case '\r': sb.append("\\r"); break;
          case '\t': sb.append("\\t"); break;
          default:
            boolean lone = false;
            if (Character.isHighSurrogate(c)) {
              if (j + 1 < v.length() && Character.isLowSurrogate(v.charAt(j + 1))) {
                sb.append(c).append(v.charAt(++j));
                continue;
              }
              lone = true;
            } else if (Character.isLowSurrogate(c)) {
              lone = true;
            }
            if (c < 0x20 || lone) sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            else sb.append(c);
        }
      }
      return sb.append('"').toString();
    }
  }

  private LuceneBm25() {}
}
