// The one place a test decides to skip. Tests that need something the repository does not hold
// (../shared/data, the training venv, the Lucene peer, a sentence encoder, Elasticsearch) pass
// the reason it is missing through `prerequisite`: on a developer's machine the tests that need
// it skip, saying why; under AMBIGQA_TEST_REQUIRE_ALL=1 (set by .ci/run, where everything is
// installed) a missing prerequisite is a failing test of its own, so CI cannot pass by skipping.
import { test } from 'node:test'

export const REQUIRE_ALL = process.env.AMBIGQA_TEST_REQUIRE_ALL === '1'

const failed = new Set<string>()

/**
 * `missing`: why the prerequisite is absent, or false when it is present. Returns the value for
 * node:test's `skip` option. `required` forces the failure for one kind of prerequisite (the
 * older AMBIGQA_TEST_REQUIRE_ELASTICSEARCH switch).
 */
export function prerequisite(missing: string | false, required = false): string | false {
  if (missing === false) return false
  if ((REQUIRE_ALL || required) && !failed.has(missing)) {
    failed.add(missing)
    test(`prerequisite missing: ${missing}`, () => {
      throw new Error(`${missing}. Under AMBIGQA_TEST_REQUIRE_ALL=1 (CI) every prerequisite must be present: install it (see .ci/run) or unset the switch`)
    })
  }
  return missing
}
