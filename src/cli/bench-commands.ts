import type { Command } from 'commander'

export function registerBenchCommands(_program: Command): void {}
