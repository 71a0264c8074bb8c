/* The auto searcher's rule; see auto.h. */
#include "auto.h"

#include "sampler_internal.h"

/* Whether some sampled parameter is a choice among several values (a
 * conditional choice's branches make the space conditional too). */
static bool has_choice(const Space *space)
{
    for (int i = 0; i < space->nparams; i++)
        if (space->params[i].kind == SPACE_CHOICE && space->params[i].count > 1)
            return true;
    return false;
}

SearcherType auto_pick(const Space *space, const SearcherSpec *a, int64_t n_obs, int n_objectives,
                       int n_constraints)
{
    if (n_objectives > 1 || n_constraints > 0)
        return SEARCHER_BAYES;
    if (n_obs < a->switch_after && space->dims <= AUTO_GP_MAX_DIMS)
        return SEARCHER_BAYES;
    if (space->conditional || has_choice(space))
        return SEARCHER_TPE;
    return SEARCHER_CMAES;
}

SearcherSpec auto_spec(const SearcherSpec *a, SearcherType pick)
{
    SearcherSpec s = *a;
    s.type = pick;
    /* tpe's defaults (searcher_parse); cmaes's are its zeros. */
    s.multivariate = s.group = s.constant_liar = pick == SEARCHER_TPE;
    /* Under rungs rungd sets auto's multi_fidelity for its tpe (the rung
     * ranking, tpe_mf.c); bayes keeps last values, as its own default. */
    s.multi_fidelity = pick == SEARCHER_TPE && a->multi_fidelity == 1;
    s.sigma0 = 0.0;
    s.popsize = 0;
    s.no_restart = false;
    return s;
}
