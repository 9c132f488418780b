"""The worked domain pack ``agentbench new-pack`` writes: a heating repair on a quote.

Authored from the seed's own example of a frozen semantic event: an engineer's
quote to replace a boiler's control board, priced net with VAT on top. The pack
is an ordinary operations domain pack (``pytest_agentbench.sdk``'s contract and
nothing else of ours): the scaffold copies these modules into a distribution of
its own and registers ``pack:PACK`` under ``pytest_agentbench.operations_packs``.
"""
