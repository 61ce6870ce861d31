"""Formal logic core: FLD-notation formulas, their parser, proof notation, z3 entailment, the deduction rules.

>>> entails([parse_formula("{A}{a}"), parse_formula("(x): {A}x -> {B}x")], parse_formula("{B}{a}"))
True
"""
from finelogic.logic.formula import (FALSUM, And, Atom, Const, Exists, Falsum, ForAll, Formula, Implies, Not, Or,
                                     Term, Var, constants, format_formula, free_vars, negate, predicates, states,
                                     subformulas, substitute)
from finelogic.logic.parser import FormulaSyntaxError, PositionedSyntaxError, parse_formula
from finelogic.logic.proof import ProofNotationError, ProofStep, parse_proof_steps, parse_step
from finelogic.logic.prover import ProverError, Theory, consistent, entails, entails_each
from finelogic.logic.rules import (RULE_NAMES, RULES, Discharged, MetaFormula, MetaTerm, Rule, Substituted,
                                   instantiate_rule, is_atomic_step, match, matches_rule, premise_formulas)
