package cmd

import (
	"log/slog"

	"github.com/stoke-cli/stoke/agents/llm/price"
)

// checkPrices makes the run's cost honest. With --max-budget-usd, a model the price table
// does not know is refused (its calls would cost 0 and the budget would never fire);
// without, each model that cannot be priced gets one warning when it is first used.
func checkPrices(prices price.Table, model string, budgetUSD float64, logger *slog.Logger) (price.Table, error) {
	if budgetUSD > 0 && !prices.Known(model) {
		return prices, usageErrorf("--max-budget-usd needs a price for model %q: add it under prices: in settings.yaml (USD per million tokens, see docs/pricing.md)", model)
	}
	return prices.WarnUnknown(func(m string) {
		logger.Warn("no price known for this model: total_cost_usd leaves its calls out; add it under prices: in settings.yaml", "model", m)
	}), nil
}
