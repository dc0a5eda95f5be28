-- A show's own cap on active buyers (0: no cap). ARGV[7] = cap.
redis.call('SET', CAP, ARGV[7])
return 1
