/** TPC-H decision support: transcribed structure (see ../README.md for the source). */
import type { RealSource } from '../model.js';

export const tpch: RealSource = {
  id: 'tpch',
  title: 'TPC-H decision support',
  citation: [{ repo: 'gregrahn/tpch-kit', path: 'dbgen/dss.ddl', commit: '852ad0a5ee31ebefeed884cea4188781dd9613a3' }, { repo: 'gregrahn/tpch-kit', path: 'dbgen/dss.ri', commit: '852ad0a5ee31ebefeed884cea4188781dd9613a3' }],
  schemas: [
    {
      name: 'tpch',
      tables: [
        {
          name: 'customer',
          columns: [
            'c_custkey integer NOT NULL',
            'c_name character varying(25) NOT NULL',
            'c_address character varying(40) NOT NULL',
            'c_nationkey integer NOT NULL',
            'c_phone character(15) NOT NULL',
            'c_acctbal numeric(15,2) NOT NULL',
            'c_mktsegment character(10) NOT NULL',
            'c_comment character varying(117) NOT NULL',
          ],
          pk: ['c_custkey'],
          fks: [
            'c_nationkey -> tpch.nation(n_nationkey)',
          ],
        },
        {
          name: 'lineitem',
          columns: [
            'l_orderkey integer NOT NULL',
            'l_partkey integer NOT NULL',
            'l_suppkey integer NOT NULL',
            'l_linenumber integer NOT NULL',
            'l_quantity numeric(15,2) NOT NULL',
            'l_extendedprice numeric(15,2) NOT NULL',
            'l_discount numeric(15,2) NOT NULL',
            'l_tax numeric(15,2) NOT NULL',
            'l_returnflag character(1) NOT NULL',
            'l_linestatus character(1) NOT NULL',
            'l_shipdate date NOT NULL',
            'l_commitdate date NOT NULL',
            'l_receiptdate date NOT NULL',
            'l_shipinstruct character(25) NOT NULL',
            'l_shipmode character(10) NOT NULL',
            'l_comment character varying(44) NOT NULL',
          ],
          pk: ['l_orderkey', 'l_linenumber'],
          fks: [
            'l_orderkey -> tpch.orders(o_orderkey)',
            'l_partkey, l_suppkey -> tpch.partsupp(ps_partkey, ps_suppkey)',
          ],
        },
        {
          name: 'nation',
          columns: [
            'n_nationkey integer NOT NULL',
            'n_name character(25) NOT NULL',
            'n_regionkey integer NOT NULL',
            'n_comment character varying(152)',
          ],
          pk: ['n_nationkey'],
          fks: [
            'n_regionkey -> tpch.region(r_regionkey)',
          ],
        },
        {
          name: 'orders',
          columns: [
            'o_orderkey integer NOT NULL',
            'o_custkey integer NOT NULL',
            'o_orderstatus character(1) NOT NULL',
            'o_totalprice numeric(15,2) NOT NULL',
            'o_orderdate date NOT NULL',
            'o_orderpriority character(15) NOT NULL',
            'o_clerk character(15) NOT NULL',
            'o_shippriority integer NOT NULL',
            'o_comment character varying(79) NOT NULL',
          ],
          pk: ['o_orderkey'],
          fks: [
            'o_custkey -> tpch.customer(c_custkey)',
          ],
        },
        {
          name: 'part',
          columns: [
            'p_partkey integer NOT NULL',
            'p_name character varying(55) NOT NULL',
            'p_mfgr character(25) NOT NULL',
            'p_brand character(10) NOT NULL',
            'p_type character varying(25) NOT NULL',
            'p_size integer NOT NULL',
            'p_container character(10) NOT NULL',
            'p_retailprice numeric(15,2) NOT NULL',
            'p_comment character varying(23) NOT NULL',
          ],
          pk: ['p_partkey'],
        },
        {
          name: 'partsupp',
          columns: [
            'ps_partkey integer NOT NULL',
            'ps_suppkey integer NOT NULL',
            'ps_availqty integer NOT NULL',
            'ps_supplycost numeric(15,2) NOT NULL',
            'ps_comment character varying(199) NOT NULL',
          ],
          pk: ['ps_partkey', 'ps_suppkey'],
          fks: [
            'ps_suppkey -> tpch.supplier(s_suppkey)',
            'ps_partkey -> tpch.part(p_partkey)',
          ],
        },
        {
          name: 'region',
          columns: [
            'r_regionkey integer NOT NULL',
            'r_name character(25) NOT NULL',
            'r_comment character varying(152)',
          ],
          pk: ['r_regionkey'],
        },
        {
          name: 'supplier',
          columns: [
            's_suppkey integer NOT NULL',
            's_name character(25) NOT NULL',
            's_address character varying(40) NOT NULL',
            's_nationkey integer NOT NULL',
            's_phone character(15) NOT NULL',
            's_acctbal numeric(15,2) NOT NULL',
            's_comment character varying(101) NOT NULL',
          ],
          pk: ['s_suppkey'],
          fks: [
            's_nationkey -> tpch.nation(n_nationkey)',
          ],
        },
      ],
    },
  ],
};
