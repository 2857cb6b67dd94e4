/** The public sample databases of the real-schema benchmark, in load order (README.md cites each). */
import type { RealSource } from './model.js';
import { adventureworks } from './schemas/adventureworks.js';
import { airlines } from './schemas/airlines.js';
import { chinook } from './schemas/chinook.js';
import { dvdrental } from './schemas/dvdrental.js';
import { employees } from './schemas/employees.js';
import { northwind } from './schemas/northwind.js';
import { tpcds } from './schemas/tpcds.js';
import { tpch } from './schemas/tpch.js';
import { world } from './schemas/world.js';

export const SOURCES: readonly RealSource[] = [dvdrental, chinook, northwind, adventureworks, tpch, tpcds, airlines, world, employees];

export const SOURCE_IDS: readonly string[] = SOURCES.map((s) => s.id);
