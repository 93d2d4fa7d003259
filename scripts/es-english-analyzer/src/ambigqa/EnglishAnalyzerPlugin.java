package ambigqa;

import java.util.Map;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.index.analysis.AbstractIndexAnalyzerProvider;
import org.elasticsearch.index.analysis.AnalyzerProvider;
import org.elasticsearch.indices.analysis.AnalysisModule.AnalysisProvider;
import org.elasticsearch.plugins.AnalysisPlugin;
import org.elasticsearch.plugins.Plugin;

/**
 * Registers Lucene's EnglishAnalyzer (standard tokenizer, possessives, lower case, English stop
 * words, Porter stemming) as the "english" analyzer. The integ-test-zip distribution of
 * Elasticsearch lacks the analysis-common module that normally provides it.
 */
public class EnglishAnalyzerPlugin extends Plugin implements AnalysisPlugin {
  static final class Provider extends AbstractIndexAnalyzerProvider<EnglishAnalyzer> {
    private final EnglishAnalyzer analyzer = new EnglishAnalyzer();

    Provider(String name, Settings settings) {
      super(name, settings);
    }

    @Override
    public EnglishAnalyzer get() {
      return analyzer;
    }
  }

  @Override
  public Map<String, AnalysisProvider<AnalyzerProvider<? extends Analyzer>>> getAnalyzers() {
    return Map.of("english", (indexSettings, env, name, settings) -> new Provider(name, settings));
  }
}
