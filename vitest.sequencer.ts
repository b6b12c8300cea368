import { readFile } from "node:fs/promises"
import type { TestSpecification } from "vitest/node"
import { BaseSequencer } from "vitest/node"

/** The tag of a file that takes seconds (see the config's `tags`). */
const slow = /(?:\/\/|\*)\s*@module-tag\s+slow\b/

/**
 * The order a run starts its files in: vitest's (each project's files together, those that took longest in the last
 * run first), except that on a run with no durations recorded (a fresh clone), each project's files tagged `slow`
 * come first. Started last, on a fresh clone (vitest then orders by size), they kept one or two workers busy for
 * seconds after the others had run out of files; started first, the short files fill the cores around them.
 */
export class SlowFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const sorted = await super.sort(files)
    if (sorted.every((spec) => this.ctx.cache.getTestSpecificationResult(spec) !== undefined)) return sorted
    const tagged = await Promise.all(sorted.map(async (spec) => slow.test(await readFile(spec.moduleId, "utf8"))))
    // Stable: a project's files stay together (a worker serves one project's), its slow ones first.
    const projectStart = new Map<TestSpecification["project"], number>()
    sorted.forEach((spec, index) => projectStart.has(spec.project) || projectStart.set(spec.project, index))
    return sorted
      .map((spec, index) => ({ spec, index, project: projectStart.get(spec.project)!, rank: tagged[index] ? 0 : 1 }))
      .sort((a, b) => a.project - b.project || a.rank - b.rank || a.index - b.index)
      .map(({ spec }) => spec)
  }
}
